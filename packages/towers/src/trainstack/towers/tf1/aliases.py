"""tensorpack names a ported script still uses, and what they are in TensorFlow 2.

- ``tfv1``: ``tf.compat.v1`` (tensorpack's ``tensorpack.compat.tfv1``).
- :func:`get_num_gpu`: the GPUs ``CUDA_VISIBLE_DEVICES`` lists, else those TensorFlow sees.
- :class:`KerasPhaseCallback`: kept so that ported Keras-in-tensorpack scripts
  run; it does nothing (see its docstring).
- :class:`DataParallelBuilder`: not provided; says what replaces it.
"""
from __future__ import annotations

import logging
import os
from typing import Any

import tensorflow as tf

from trainstack.loop import Callback

__all__ = ["tfv1", "get_num_gpu", "KerasPhaseCallback", "DataParallelBuilder"]

logger = logging.getLogger("trainstack.towers")

#: ``tf.compat.v1``, as tensorpack's ``tfv1``. Its graph-mode parts (sessions, placeholders,
#: ``get_variable``, collections other than the model's variables') do not work in a trainstack
#: step; see docs/porting.md.
tfv1 = tf.compat.v1


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
