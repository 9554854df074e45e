"""DictRestore: set a trainer's variables from a dict of arrays (or a .npz file)."""
from __future__ import annotations

import collections
import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from trainstack.callbacks import checkpoint_objects_of
from trainstack.callbacks.checkpoint_layout import checkpoint_variables, display_name, strip_tensor_suffix
from trainstack.loop.checks import check_bool

from .sessinit import InitReport, SessionInit

__all__ = ["DictRestore", "load_arrays"]

logger = logging.getLogger("trainstack.towers")


class DictRestore(SessionInit):
    """Set variables from a dict ``{variable name: array}``.

    A key names a variable by its Keras ``path`` (``"dense/kernel"``), its ``tf.Variable``
    name, or its path under ``checkpoint_objects`` (``"w"``); a ``":0"`` suffix is
    optional. A key naming several variables is a ValueError. Values are cast to the
    variable's dtype when NumPy casts them safely or within a kind (float64 -> float32);
    a value whose shape differs is a ValueError (``ignore_mismatch=True``: a warning, the
    variable keeps its value). Everything is checked before any variable is set.
    """

    def __init__(self, variable_dict: Mapping[str, Any], ignore_mismatch: bool = False) -> None:
        if not isinstance(variable_dict, Mapping):
            raise TypeError("DictRestore takes a dict {variable name: array}, got "
                            f"{type(variable_dict).__name__}")
        values: dict[str, Any] = {}
        for name, value in variable_dict.items():
            if not isinstance(name, str):
                raise TypeError(f"DictRestore: keys must be variable names (str), got {name!r}")
            values[strip_tensor_suffix(name)] = value
        self._values = values
        self.ignore_mismatch = check_bool(type(self).__name__, "ignore_mismatch", ignore_mismatch)

    def __repr__(self) -> str:
        return f"DictRestore(<{len(self._values)} arrays>)"

    def _run_init(self, trainer: Any) -> InitReport:
        variables = checkpoint_variables(checkpoint_objects_of(trainer, repr(self)))
        # paths first; a tf.Variable's own name only when no path matches (Keras names repeat: "kernel")
        by_path: dict[str, dict[int, tuple[str, Any]]] = collections.defaultdict(dict)
        by_name: dict[str, dict[int, tuple[str, Any]]] = collections.defaultdict(dict)
        for path, var in variables:
            entry = (display_name(path, var), var)
            for name in {path, display_name(path, var)}:
                by_path[name][id(var)] = entry
            by_name[strip_tensor_suffix(var.name)][id(var)] = entry

        report = InitReport(source=repr(self))
        updates: dict[int, tuple[str, Any, np.ndarray]] = {}
        problems = []
        for key, value in self._values.items():
            candidates = by_path.get(key) or by_name.get(key)
            if not candidates:
                report.unused.append(key)
                continue
            if len(candidates) > 1:
                raise ValueError(f"DictRestore: {key!r} names {len(candidates)} variables "
                                 f"({sorted(n for n, _ in candidates.values())}); use their Keras "
                                 "paths or their paths under checkpoint_objects")
            ((vid, (name, var)),) = candidates.items()
            if vid in updates:
                raise ValueError(f"DictRestore: keys {updates[vid][0]!r} and {key!r} both name "
                                 f"variable {name}")
            array = np.asarray(value)
            dtype = tf.as_dtype(var.dtype).as_numpy_dtype
            if tuple(array.shape) != tuple(var.shape):
                problems.append(f"{key}: value {tuple(array.shape)}, variable {tuple(var.shape)}")
                report.skipped.append(name)
                continue
            if array.dtype != dtype:
                if not np.can_cast(array.dtype, dtype, "same_kind"):
                    raise TypeError(f"DictRestore: {key!r} is {array.dtype}, which does not cast to "
                                    f"variable {name} ({np.dtype(dtype)})")
                array = array.astype(dtype)
            updates[vid] = (key, var, array)
        if problems and not self.ignore_mismatch:
            raise ValueError(f"DictRestore: shapes differ for {'; '.join(problems)}. Pass "
                             "ignore_mismatch=True to keep these variables as they are")
        if problems:
            logger.warning("DictRestore: shapes differ, these variables keep their values: %s",
                           "; ".join(problems))
        for _, var, array in updates.values():
            var.assign(array)
        restored_ids = set(updates)
        skipped = set(report.skipped)
        report.restored = sorted(display_name(path, var) for path, var in variables
                                 if id(var) in restored_ids)
        report.missing = sorted(display_name(path, var) for path, var in variables
                                if id(var) not in restored_ids and display_name(path, var) not in skipped)
        report.unused.sort()
        return report



def load_arrays(filename: str) -> dict[str, Any]:
    """The dict of arrays an ``.npz`` file holds."""
    if not tf.io.gfile.exists(filename):
        raise FileNotFoundError(f"SmartInit: {filename!r} does not exist")
    logger.info("Loading a dict of arrays from %s ...", filename)
    with tf.io.gfile.GFile(filename, "rb") as f, np.load(f) as data:
        return dict(data)
