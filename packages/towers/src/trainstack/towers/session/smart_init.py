"""SmartInit: the initializer for what it is given (a path, a dict, a list...)."""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import tensorflow as tf

from .checkpoint_init import CheckpointInit
from .dict_restore import DictRestore, load_arrays
from .sessinit import ChainInit, JustCurrentSession, SessionInit

__all__ = ["SmartInit"]


def SmartInit(obj: Any, *, ignore_mismatch: bool = False) -> SessionInit:  # noqa: N802 (tensorpack's name)
    """The initializer for ``obj``:

    - None, ``""`` or an empty dict/list: :class:`JustCurrentSession` (do nothing);
    - a :class:`SessionInit`: itself;
    - a dict ``{variable name: array}``: :class:`DictRestore`;
    - a path to an ``.npz`` file: :class:`DictRestore` of its arrays (tensorpack's ``.npy``, a
      pickled dict, is ``trainstack.tensorpack``'s SmartInit's);
    - a directory or checkpoint prefix: :class:`CheckpointInit`;
    - a list or tuple of these: :class:`ChainInit`, in order.

    ``ignore_mismatch``: values whose shape differs from their variable's are skipped with a
    warning instead of raising.
    """
    if obj is None or (isinstance(obj, (str, dict, list, tuple)) and not obj):
        return JustCurrentSession()
    if isinstance(obj, SessionInit):
        return obj
    if isinstance(obj, (list, tuple)):
        return ChainInit([SmartInit(x, ignore_mismatch=ignore_mismatch) for x in obj])
    if isinstance(obj, os.PathLike):
        obj = os.fspath(obj)
    if isinstance(obj, str):
        path = os.path.expanduser(obj)
        if path.endswith(".npy"):
            raise ValueError(f"SmartInit: {obj!r} is a .npy file: tensorpack's pickled dict of arrays, which "
                             "trainstack.tensorpack's SmartInit loads (load only files you trust); or save it as .npz")
        if path.endswith(".npz"):
            return DictRestore(load_arrays(path), ignore_mismatch=ignore_mismatch)
        if tf.io.gfile.isdir(path) or tf.io.gfile.glob(path + "*"):
            return CheckpointInit(path, ignore_mismatch=ignore_mismatch)
        raise FileNotFoundError(f"SmartInit: {obj!r} is no checkpoint prefix, directory or .npz file")
    if isinstance(obj, Mapping):
        return DictRestore(obj, ignore_mismatch=ignore_mismatch)
    raise TypeError(f"SmartInit takes None, a SessionInit, a checkpoint path or directory, a .npz "
                    f"path, a dict {{variable name: array}}, or a list of these; got {type(obj).__name__}")

