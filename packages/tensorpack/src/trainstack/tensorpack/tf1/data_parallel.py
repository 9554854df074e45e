"""tensorpack's ``DataParallelBuilder``: its ``call_for_each_tower`` builds a custom multi-GPU
trainer's towers (tensorpack's multi-GPU GAN trainer), each under this layer's
:class:`~.tower.TowerContext`, so that towers built in a trainer's ``__init__`` are recorded
as the single-tower form's are. Its instances (data-parallel graph builders) are the
data-parallel trainers' job.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from trainstack.towers.session.devices import check_devices, resolve_devices

from .tower import TowerContext

__all__ = ["DataParallelBuilder"]

logger = logging.getLogger("trainstack.tensorpack")


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
