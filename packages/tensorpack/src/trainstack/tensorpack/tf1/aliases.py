"""tensorpack names a ported script still uses, and what they are in TensorFlow 2.

- ``tfv1``: ``tf.compat.v1`` (tensorpack's ``tensorpack.compat.tfv1``).
- :func:`get_num_gpu`: the GPUs ``CUDA_VISIBLE_DEVICES`` lists, else those TensorFlow sees.
- :class:`KerasPhaseCallback`: kept so that ported Keras-in-tensorpack scripts
  run; it does nothing (see its docstring).
- :class:`DataParallelBuilder`: its ``call_for_each_tower`` (a multi-GPU GAN trainer's towers);
  its instances (data-parallel graph builders) are the data-parallel trainers' job.
- ``tf.compat.v1.Session`` / ``InteractiveSession`` made while a tower is traced (``build_graph``,
  ``optimizer()``) or a tensorpack-style trainer is built: refused at once (:data:`PATCHES`), with
  what replaces ``sess.run``. Elsewhere they are TensorFlow's own (a script's
  ``with tf.compat.v1.Session():`` block around the training code is like its
  ``with tf.Graph().as_default():``: the trainer runs as outside it).
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from trainstack.loop import Callback
from trainstack.towers.session.devices import check_devices, resolve_devices
from trainstack.towers.tower.tower import TowerContext

from .switch import Frame, Patch, TF1CallError

__all__ = ["tfv1", "get_num_gpu", "KerasPhaseCallback", "DataParallelBuilder", "PATCHES"]

logger = logging.getLogger("trainstack.tensorpack")

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
    """tensorpack's ``DataParallelBuilder``: its :meth:`call_for_each_tower`, which a custom
    multi-GPU trainer (tensorpack's multi-GPU GAN trainer) builds its towers with.

    Building a trainer's whole data-parallel graph (``SyncMultiGPUParameterServerBuilder``,
    ``SyncMultiGPUReplicatedBuilder``: instances of the class) is the data-parallel trainers'
    job in trainstack: ``SyncMultiGPUTrainerReplicated``, ``SyncMultiGPUTrainerParameterServer``,
    ``AsyncMultiGPUTrainer`` (``launch_train_with_config(config, SyncMultiGPUTrainerReplicated(n))``);
    constructing one raises NotImplementedError saying so.
    """

    _MESSAGE = ("tensorpack's DataParallelBuilder instances (the graph builders of its data-parallel "
                "trainers) are not provided in trainstack: use a data-parallel trainer "
                "(SyncMultiGPUTrainerReplicated, SyncMultiGPUTrainerParameterServer, AsyncMultiGPUTrainer) "
                "with launch_train_with_config. A custom multi-tower trainer builds its towers with "
                "DataParallelBuilder.call_for_each_tower(towers, func, devices) (see docs/porting.md)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(self._MESSAGE)

    @staticmethod
    def call_for_each_tower(towers: Sequence[int], func: Callable[[], Any], devices: Sequence[Any] | None = None,
                            use_vs: Sequence[bool] | None = None) -> list[Any]:
        """Call ``func()`` once per tower, as tensorpack 0.11 did; return the results, in order.

        Tower ``k`` of ``towers`` (a list of GPU indices) is built under
        ``TowerContext(f'tower{k}', is_training=True, index=k)`` inside ``tf.device(devices[k])``.
        ``devices`` defaults to one device per entry of ``towers``: ``/device:GPU:<t>`` when
        TensorFlow sees a GPU, else ``/device:CPU:<t>`` (see ``logical_cpu_devices``), as the
        data-parallel trainers place their towers; a device that does not exist is a ValueError
        naming the devices there are. Variables are created by the first tower and shared by the
        others (tensorpack's default, ``use_vs`` all False; per-tower variable scopes are the
        replicated trainer's, ``SyncMultiGPUTrainerReplicated``).

        In a ``TowerTrainer`` subclass's ``__init__`` (tensorpack's multi-GPU GAN trainer), the
        towers are recorded, each on its device, and their costs combined with ``tf.add_n`` and
        arithmetic (``tf.add_n([c[0] for c in cost_list]) * (1.0 / num_gpu)``) are losses
        ``opt.minimize`` takes: the trainer's step builds every tower on its own batch of the
        input, then applies the optimizations in their ``tf.control_dependencies`` order.
        """
        towers = list(towers)
        if not towers:
            raise ValueError("DataParallelBuilder.call_for_each_tower(): towers is empty")
        if use_vs is not None:
            if len(use_vs) != len(towers):
                raise ValueError(f"call_for_each_tower(): {len(use_vs)} use_vs for {len(towers)} towers")
            if any(use_vs):
                raise NotImplementedError(
                    "call_for_each_tower(use_vs=[... True ...]): towers with their own variables are "
                    "SyncMultiGPUTrainerReplicated's (launch_train_with_config(config, "
                    "SyncMultiGPUTrainerReplicated(n))); here every tower shares the first tower's variables")
        if devices is None:
            devices = resolve_devices(towers, "DataParallelBuilder.call_for_each_tower()")
        else:
            devices = list(devices)
            if len(devices) != len(towers):
                raise ValueError(f"call_for_each_tower(): {len(devices)} devices for {len(towers)} towers")
            if not all(isinstance(d, (str, tf.DeviceSpec)) for d in devices):
                raise TypeError(
                    f"call_for_each_tower(devices={devices!r:.120}): give device names ('/gpu:0'); device "
                    "functions (tensorpack's LeastLoadedDeviceSetter) place variables in TF1 graphs, and "
                    "TensorFlow 2 keeps each variable where it was created")
            devices = [d.to_string() if isinstance(d, tf.DeviceSpec) else d for d in devices]
        check_devices(devices, "DataParallelBuilder.call_for_each_tower()")
        results = []
        for k, device in enumerate(devices):
            logger.info("Building graph for training tower %d on device %s ...", k, device)
            with tf.device(device), TowerContext(f"tower{k}", is_training=True, index=k):
                results.append(func())
        return results

    @staticmethod
    def build_on_towers(towers: Sequence[int], func: Callable[[], Any], devices: Sequence[Any] | None = None,
                        use_vs: Sequence[bool] | None = None) -> list[Any]:
        """tensorpack's older name of :meth:`call_for_each_tower`."""
        return DataParallelBuilder.call_for_each_tower(towers, func, devices, use_vs)


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
