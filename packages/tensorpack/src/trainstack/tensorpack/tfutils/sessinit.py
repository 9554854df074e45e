"""tensorpack 0.11's ``tensorpack.tfutils.sessinit``: the core's initializers (``trainstack.towers``)
and tensorpack's names for them, ``SaverRestore``, ``SaverRestoreRelaxed`` and ``get_model_loader``."""
from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from trainstack.towers import ChainInit, CheckpointInit, DictRestore, JustCurrentSession, SessionInit, SmartInit

from .._replaced import unprovided

__all__ = [
    "SessionInit", "ChainInit", "SaverRestore", "SaverRestoreRelaxed", "DictRestore", "JustCurrentSession",
    "get_model_loader", "SmartInit"
]


class SaverRestore(CheckpointInit):
    """tensorpack's name for :class:`CheckpointInit`: ``SaverRestore(model_path, prefix=None, ignore=())``.

    ``prefix`` (load a checkpoint into a name scope) has no meaning for object-based
    checkpoints, which match values by object structure, not by name: it must be None.
    To load a sub-model's checkpoint, list that sub-model in ``checkpoint_objects`` under
    the name the checkpoint used, or use :class:`DictRestore` with renamed keys.
    """

    def __init__(self, model_path: str | os.PathLike, prefix: str | None = None, ignore: Iterable[str] = (),
                 **kwargs: Any) -> None:
        if prefix is not None:
            raise TypeError(
                f"{type(self).__name__}(prefix={prefix!r}): TF2 checkpoints match values by object "
                "structure, not by variable name, so a name prefix means nothing. List the sub-model in "
                "checkpoint_objects under the name the checkpoint used, or use DictRestore with renamed keys")
        super().__init__(model_path, ignore, **kwargs)


class SaverRestoreRelaxed(SaverRestore):
    """:class:`SaverRestore` that skips (with a warning) values whose shape differs from their variable's."""

    def __init__(self, model_path: str | os.PathLike, prefix: str | None = None,
                 ignore: Iterable[str] = (), **kwargs: Any) -> None:
        kwargs.setdefault("ignore_mismatch", True)
        super().__init__(model_path, prefix, ignore, **kwargs)


#: tensorpack's older name for :func:`~trainstack.towers.SmartInit`.
get_model_loader = SmartInit

__getattr__ = unprovided(__name__)
