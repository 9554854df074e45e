"""tensorpack names a ported script still uses, and what they are in TensorFlow 2.

- :func:`get_num_gpu`: the GPUs ``CUDA_VISIBLE_DEVICES`` lists, else those TensorFlow sees.
- :class:`KerasPhaseCallback`: kept so that ported Keras-in-tensorpack scripts
  run; it does nothing (see its docstring).
- ``tf.compat.v1.Session`` / ``InteractiveSession`` made while a tower is traced (``build_graph``,
  ``optimizer()``) or a tensorpack-style trainer is built: refused at once (:data:`PATCHES`), with
  what replaces ``sess.run``. Elsewhere they are TensorFlow's own (a script's
  ``with tf.compat.v1.Session():`` block around the training code is like its
  ``with tf.Graph().as_default():``: the trainer runs as outside it).
"""
from __future__ import annotations

import logging
import os
from typing import Any

import tensorflow as tf

from trainstack.loop import Callback

from .switch import Frame, Patch, TF1CallError

__all__ = ["get_num_gpu", "KerasPhaseCallback", "PATCHES"]

logger = logging.getLogger("trainstack.tensorpack")

def get_num_gpu() -> int:
    """The number of GPUs, counted as tensorpack's ``get_num_gpu`` did.

    - ``CUDA_VISIBLE_DEVICES`` set: the GPUs it lists, i.e. its comma-separated entries, empty
      ones skipped, up to the first negative index (from which CUDA hides every GPU):
      ``"0,2"`` -> 2, ``""`` and ``"-1"`` -> 0. The count is the variable's, as tensorpack's was
      (TensorFlow is asked only for the warning below).
    - unset: the GPUs TensorFlow sees, ``tf.config.list_physical_devices('GPU')`` (tensorpack
      asked ``nvidia-smi -L``, NVML, then TensorFlow: for a TensorFlow built with CUDA that is
      the driver's count; one built without CUDA gives 0, the GPUs it can use). Listing the
      physical devices does not initialize them: runtime settings can still be applied.

    When ``CUDA_VISIBLE_DEVICES`` lists more GPUs than TensorFlow sees (it was changed after
    TensorFlow started, or TensorFlow cannot use them) the count is returned with a warning, as
    tensorpack did. Towers do not follow the count: a multi-GPU trainer given ``n`` towers
    (``SyncMultiGPUTrainerReplicated(get_num_gpu())``) puts tower ``k`` on ``/device:GPU:k``
    when TensorFlow sees any GPU, else on ``/device:CPU:k`` (one CPU device unless it was split
    with ``logical_cpu_devices``); it does not wrap towers around nor move them to another
    device: when a tower's device does not exist, ``setup_graph`` (``launch_train_with_config``)
    raises a ValueError naming the devices this process has.
    """
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is None:
        return len(tf.config.list_physical_devices("GPU"))
    count = 0
    for entry in (e.strip() for e in env.split(",")):
        if entry.startswith("-"):
            break
        count += bool(entry)
    seen = len(tf.config.list_physical_devices("GPU")) if count else 0
    if count > seen:
        logger.warning("get_num_gpu(): CUDA_VISIBLE_DEVICES=%r lists %d GPU(s), but TensorFlow sees %d. "
                       "A trainer given %d towers places tower k on /device:GPU:k (on /device:CPU:k when "
                       "TensorFlow sees no GPU) and fails at setup for the devices that do not exist",
                       env, count, seen, count)
    return count


class KerasPhaseCallback(Callback):
    """tensorpack's callback that set Keras's learning phase around each step. A no-op.

    Keras 3 has no global learning phase: a layer's training behaviour comes from its
    ``training=`` argument. Pass ``training=self.training`` (``ModelDesc.training``, i.e.
    ``get_current_tower_context().is_training``) to the layers that need it. The callback is
    kept so that ported scripts listing it run unchanged; it overrides no hook, so it costs
    nothing.
    """

    def __init__(self, is_training: bool = True) -> None:
        self.is_training = bool(is_training)


# -- TF1 sessions -----------------------------------------------------------------------------------
SESSION = ("tf.compat.v1.{cls}() was called {where}: trainstack has no TF1 session to run a graph in. "
           "The trainer traces its step with tf.function and runs it itself. Remove the {cls}; to run "
           "a step function in a trainer use self.hooked_sess.run(fn) (or trainer.run(fn)), to read a "
           "tensor of the step in a callback fetch it by name (return its name from "
           "Callback._before_run), and read a variable with .numpy(). See docs/porting.md")


def _where(frame: Frame) -> str:
    if frame.tower is not None:
        return f"while tower {frame.tower.name!r} was built (build_graph)"
    return "while a trainer was built (its optimizer() or a tensorpack-style trainer's __init__)"


def _refuse_session(cls: str) -> Any:
    def emulate(original: Any, frame: Frame, session: Any, *args: Any, **kwargs: Any) -> Any:
        session._session = None  # what BaseSession.__del__ reads of the object left unmade
        raise TF1CallError(SESSION.format(cls=cls, where=_where(frame)))

    return emulate


#: ``Session.__init__`` patched (not the class: ``isinstance`` checks in other threads keep working)
PATCHES = [Patch(lambda: tf.compat.v1.Session, "__init__", _refuse_session("Session")),
           Patch(lambda: tf.compat.v1.InteractiveSession, "__init__", _refuse_session("InteractiveSession"))]
