"""Where the older trainer API (tensorpack 003) plugs into the trainers.

The trainers take the older forms (``SimpleTrainer(config)``, ``trainer.train()``,
``SyncMultiGPUTrainerReplicated(config, gpu_prefetch=True)``, ...), but what those
do lives in :mod:`trainstack.towers.legacy`, a layer on top of the trainers that
they do not import: importing it (``import trainstack.towers`` does) registers a
:class:`LegacyAPI` here, and the trainers hand the older forms' arguments to it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

__all__ = ["LegacyAPI", "register", "legacy_api", "is_legacy_config", "reject_legacy_options"]


class LegacyAPI(Protocol):
    """What the trainers ask of the older API (see :mod:`trainstack.towers.legacy`)."""

    def is_config(self, obj: Any) -> bool:
        """Whether ``obj``, a trainer's first argument, is the older forms' TrainConfig."""

    def bind(self, trainer: Any, config: Any) -> None:
        """``Trainer(config)``: check ``config`` and keep it for ``trainer.train()``."""

    def train(self, trainer: Any) -> None:
        """``trainer.train()``: train with the config bound by :meth:`bind`."""

    def devices(self, config: Any) -> list[Any]:
        """The training towers' devices the config names."""

    def options(self, owner: str, signature: str, given: Mapping[str, Any], defaults: Mapping[str, Any],
                **must_be_none: Any) -> dict[str, Any]:
        """The older form's extra keyword arguments, checked."""

    def build_on_multi_tower(self, towers: Sequence[int], func: Callable[[], Any],
                             devices: Sequence[Any] | None, var_strategy: str,
                             vs_names: Sequence[str] | None) -> list[Any]:
        """``MultiGPUTrainerBase.build_on_multi_tower``."""


_registered: LegacyAPI | None = None


def register(api: LegacyAPI) -> None:
    """Make ``api`` the older API the trainers use (called by :mod:`trainstack.towers.legacy`)."""
    global _registered  # noqa: PLW0603 - one registration per process
    _registered = api


def legacy_api(form: str) -> LegacyAPI:
    """The registered older API, for the older form ``form``; an error if none is."""
    if _registered is None:
        raise TypeError(f"{form} is the older trainer API (tensorpack 003), provided by "
                        "trainstack.towers.legacy: import trainstack.towers (or trainstack.towers.legacy) "
                        "to use it")
    return _registered


def is_legacy_config(obj: Any) -> bool:
    """Whether ``obj`` is the older forms' TrainConfig (False while no older API is registered)."""
    return _registered is not None and _registered.is_config(obj)


def reject_legacy_options(owner: str, given: Mapping[str, Any]) -> None:
    """The current form of ``owner`` takes none of the older form's keyword arguments ``given``."""
    if given:
        hint = (" (gpu_prefetch belongs to the older form (config, ...); set "
                "trainer.gpu_prefetch = False instead)" if "gpu_prefetch" in given else "")
        raise TypeError(f"{owner}() got unexpected keyword argument(s) {sorted(given)}{hint}")
