"""tensorpack names a ported script still uses, and what they are in TensorFlow 2.

- ``tfv1``: ``tf.compat.v1`` (tensorpack's ``tensorpack.compat.tfv1``).
- :func:`get_num_gpu`: the GPUs TensorFlow can use in this process.
- :class:`KerasPhaseCallback`: kept so that ported Keras-in-tensorpack scripts
  run; it does nothing (see its docstring).
- :class:`DataParallelBuilder`: not provided; says what replaces it.
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from trainstack.loop import Callback

__all__ = ["tfv1", "get_num_gpu", "KerasPhaseCallback", "DataParallelBuilder"]

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


class DataParallelBuilder:
    """tensorpack's graph builder for data-parallel towers; not provided in trainstack.

    The data-parallel trainers build the towers themselves:
    ``SyncMultiGPUTrainerReplicated``, ``SyncMultiGPUTrainerParameterServer`` and
    ``AsyncMultiGPUTrainer`` (``launch_train_with_config(config, SyncMultiGPUTrainerReplicated(
    num_gpus))``). A custom multi-tower trainer (e.g. a multi-GPU GAN) traces its own step with
    ``TracedStep``, calling the ``TowerFunc`` once per device under ``TowerContext(f'tower{k}',
    is_training=True, index=k)`` inside ``tf.device(...)``; see ``examples/gan_toy.py``.
    """

    _MESSAGE = ("tensorpack's DataParallelBuilder is not provided in trainstack: use a data-parallel "
                "trainer (SyncMultiGPUTrainerReplicated, SyncMultiGPUTrainerParameterServer, "
                "AsyncMultiGPUTrainer) with launch_train_with_config, or trace your own step with "
                "TracedStep, calling the TowerFunc once per device under TowerContext(f'tower{k}', "
                "is_training=True, index=k) (see examples/gan_toy.py and docs/porting.md)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(self._MESSAGE)

    @staticmethod
    def build_on_towers(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(DataParallelBuilder._MESSAGE)

    @staticmethod
    def call_for_each_tower(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(DataParallelBuilder._MESSAGE)
