"""tensorpack names a ported script still uses that need nothing but TensorFlow.

- ``tfv1``: ``tf.compat.v1`` (tensorpack's ``tensorpack.compat.tfv1``).
- :func:`get_num_gpu`: the GPUs TensorFlow can use in this process.
- :class:`KerasPhaseCallback`: kept so that ported Keras-in-tensorpack scripts
  run; it does nothing (see its docstring).
"""
from __future__ import annotations

import tensorflow as tf

from trainstack.loop import Callback

__all__ = ["tfv1", "get_num_gpu", "KerasPhaseCallback"]

#: ``tf.compat.v1``, as tensorpack's ``tfv1``. Its graph-mode parts (sessions, placeholders,
#: ``get_variable``, collections) do not work in a trainstack step; see docs/porting.md.
tfv1 = tf.compat.v1


def get_num_gpu() -> int:
    """The number of GPUs TensorFlow sees in this process (after ``CUDA_VISIBLE_DEVICES``).

    tensorpack counted ``CUDA_VISIBLE_DEVICES`` entries or ``nvidia-smi``'s GPUs; this asks
    TensorFlow (``tf.config.list_physical_devices('GPU')``), so a TensorFlow built without
    CUDA gives 0 rather than a count it cannot use. Listing the physical devices does not
    initialize them: runtime settings (memory growth, logical devices) can still be applied.
    """
    return len(tf.config.list_physical_devices("GPU"))


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
