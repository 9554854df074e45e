"""tensorpack 0.11's ``tensorpack.tfutils.varmanip``: checkpoints as dicts of arrays, and their paths
(read and written by name, as TF1's ``Saver``; the session-only ``SessionUpdate`` and
``dump_session_params`` are in ``_replaced``)."""
from __future__ import annotations

import glob
import operator
import os
import pprint
from typing import Any

import numpy as np
import tensorflow as tf

from trainstack.callbacks import logger

from .._replaced import stand_in_names, unprovided

__all__ = ["load_chkpt_vars", "save_chkpt_vars", "load_checkpoint_vars", "save_checkpoint_vars",
           "get_checkpoint_path", "get_all_checkpoints"]


def _op_name(name: str) -> str:
    return name[:-2] if name.endswith(":0") else name


def get_checkpoint_path(path: str) -> str:
    """The checkpoint prefix for a path a user gives: a ``checkpoint`` file (its latest), ``model-10.index``
    or ``model-10.data-00000-of-00001`` all give ``model-10``; a missing checkpoint is an AssertionError."""
    if os.path.basename(path) == path:
        path = os.path.join(".", path)
    if os.path.basename(path) == "checkpoint":
        if not tf.io.gfile.exists(path):
            raise AssertionError(path)
        path = tf.train.latest_checkpoint(os.path.dirname(path))
    new_path = path
    if "00000-of-00001" in path:
        new_path = path.split(".data")[0]
    elif path.endswith(".index"):
        new_path = path.split(".index")[0]
    if new_path != path:
        logger.info(f"Checkpoint path {path} is auto-corrected to {new_path}.")
        path = new_path
    if not (tf.io.gfile.exists(path) or tf.io.gfile.exists(path + ".index")):
        raise AssertionError(path)
    return path


def get_all_checkpoints(dir: str, prefix: str = "model") -> list[tuple[str, int]]:  # noqa: A002
    """``(index file, step)`` of each ``model-<step>.index`` in ``dir``, sorted by step (tensorpack globs
    ``model-*`` whatever ``prefix`` is; ``prefix`` only cuts the step out of the name)."""
    def step_from_filename(name: str) -> int:
        return int(os.path.basename(name)[len(f"{prefix}-"):-len(".index")])

    found = [(f, step_from_filename(f)) for f in glob.glob(os.path.join(dir, "model-*.index"))]
    return sorted(found, key=operator.itemgetter(1))


def load_checkpoint_vars(path: str) -> dict[str, np.ndarray]:
    """Every value of a checkpoint (or a ``.npz``) as ``{name: array}``: a TF1 checkpoint gives TF1's names
    (``conv0/W``), a ``tf.train.Checkpoint`` its object paths."""
    if path.endswith(".npz"):
        with np.load(path) as npz:
            return {_op_name(k): npz[k] for k in npz.files}
    reader = tf.train.load_checkpoint(get_checkpoint_path(path))
    return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}


def save_checkpoint_vars(dic: dict[str, Any], path: str) -> None:
    """Save ``{name: value}`` as a ``.npz`` (a path ending with it) or as a name-based checkpoint (TF1's
    format, with a ``checkpoint`` file naming it), which :func:`load_checkpoint_vars` and ``SmartInit`` read."""
    logger.info(f"Variables to save to {path}:")
    logger.info(pprint.pformat(sorted(dic.keys())))
    if path.endswith(".npy"):
        raise AssertionError(f"save_checkpoint_vars(path={path!r}): use .npz, or a checkpoint prefix")
    if path.endswith(".npz"):
        np.savez_compressed(path, **dic)
        return
    names = [_op_name(k) for k in dic]
    with tf.device("/cpu:0"):
        tf.raw_ops.SaveV2(prefix=path, tensor_names=names, shape_and_slices=[""] * len(names),
                          tensors=[tf.convert_to_tensor(np.asarray(v)) for v in dic.values()])
    tf.compat.v1.train.update_checkpoint_state(os.path.dirname(os.path.abspath(path)), os.path.abspath(path))


load_chkpt_vars = load_checkpoint_vars
save_chkpt_vars = save_checkpoint_vars

__all__ += stand_in_names(__name__)

__getattr__ = unprovided(__name__)
