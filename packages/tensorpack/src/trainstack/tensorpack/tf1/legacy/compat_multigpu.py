"""The older multi-GPU API (tensorpack's 003 documents), kept for porting; deprecated.

There the multi-GPU trainers took a TrainConfig, whose ``tower`` (or
``nr_tower``) listed the GPUs, and trained with ``train()``::

    SyncMultiGPUTrainerReplicated(config, gpu_prefetch=True).train()        # older
    launch_train_with_config(config, SyncMultiGPUTrainerReplicated(gpus))   # current

The older constructors still work, through the compatibility layer of
:mod:`trainstack.towers.legacy.compat` (``bind_legacy_config``, ``train_legacy``):

- ``SyncMultiGPUTrainerReplicated(config, gpu_prefetch=True)``;
- ``SyncMultiGPUTrainerParameterServer(config, ps_device='gpu', gpu_prefetch=True)``;
- ``SyncMultiGPUTrainer(config)``: ``SyncMultiGPUTrainerParameterServer(config, ps_device='gpu')``;
- ``AsyncMultiGPUTrainer(config, scale_gradient=True)``.

The towers are ``config.tower`` (device indices: GPUs, or logical CPU devices
on a machine without GPUs). ``gpu_prefetch=False`` keeps the input on the host
(no ``StagingInput``). Also kept: ``MultiGPUTrainerBase.build_on_multi_tower``
(:func:`build_on_multi_tower`) and ``LeastLoadedDeviceSetter(worker_device,
ps_devices)`` (``trainstack.tensorpack.graph_builder.utils``; a context manager now, as TF2's
``tf.device`` takes no device functions).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tensorflow as tf

from trainstack.towers import TrainConfig
from trainstack.towers.session.devices import resolve_devices

from ..tower import TowerContext
from .compat import warn_deprecated
from .config import towers_of

__all__ = ["legacy_devices", "legacy_options", "build_on_multi_tower"]


def legacy_devices(config: TrainConfig) -> list[int]:
    """The towers of the older form: ``config.tower`` (device indices)."""
    return towers_of(config)


def legacy_options(owner: str, signature: str | None, given: Mapping[str, Any],
                   defaults: Mapping[str, Any], **must_be_none: Any) -> dict[str, Any]:
    """Check the keyword arguments only the older form takes.

    ``signature`` is the older form's (None: the trainer was called in the current
    form, which takes none of them); ``defaults``: the older form's extra arguments
    and their values so far; ``must_be_none``: arguments of the current form that the
    older one does not have.
    """
    if signature is None:
        if given:
            raise TypeError(f"{owner}() got unexpected keyword argument(s) {sorted(given)}")
        return {}
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise TypeError(f"{owner}{signature} is the older form; it takes no {unknown}")
    clashing = sorted(k for k, v in must_be_none.items() if v is not None)
    if clashing:
        raise TypeError(f"{owner}{signature} is the older form, which has no {clashing}; pass the "
                        f"devices instead of the config to use them: {owner}(gpus, ...)")
    return {**defaults, **given}


def build_on_multi_tower(towers: Sequence[int], func: Callable[[], Any],
                         devices: Sequence[Any] | None = None, var_strategy: str = "shared",
                         vs_names: Sequence[str] | None = None) -> list[Any]:
    """Call ``func()`` once per tower: under ``TowerContext('tower<k>', is_training=True, index=k)``
    and the tower's device; return the outputs, one per tower.

    ``towers``: device indices (GPUs, or logical CPU devices without GPUs);
    ``devices``: device names to use instead. ``var_strategy='shared'``: the towers
    share variables, which in TF2 means ``func`` must create them once and reuse them
    (Keras layers created outside ``func``, or a TowerFunc, whose reuse rule says so).
    ``'replicated'`` (a copy per tower through TF1 variable scopes, named by
    ``vs_names``) has no TF2 equivalent here: SyncMultiGPUTrainerReplicated replicates
    variables through ``tf.distribute.MirroredStrategy``.
    """
    warn_deprecated("MultiGPUTrainerBase.build_on_multi_tower(...)",
                    "a multi-GPU trainer (SyncMultiGPUTrainerReplicated(gpus), ...), which builds the "
                    "towers itself")
    if var_strategy == "replicated":
        raise ValueError("build_on_multi_tower(var_strategy='replicated') made a copy of the variables per "
                         "tower through TF1 variable scopes, which TF2 does not have. "
                         "SyncMultiGPUTrainerReplicated(gpus) replicates the variables with "
                         "tf.distribute.MirroredStrategy; here only var_strategy='shared' is available")
    if var_strategy != "shared":
        raise ValueError(f"build_on_multi_tower(var_strategy=...) must be 'shared' or 'replicated', "
                         f"got {var_strategy!r}")
    if vs_names is not None:
        raise ValueError("build_on_multi_tower(vs_names=...) named the per-tower variable scopes of "
                         "var_strategy='replicated'; shared towers take none (leave it None)")
    if not callable(func):
        raise TypeError(f"build_on_multi_tower(func=...) must be callable, got {func!r}")
    names = resolve_devices(list(towers) if devices is None else list(devices), "build_on_multi_tower")
    if devices is not None and len(names) != len(towers):
        raise ValueError(f"build_on_multi_tower: {len(towers)} towers {list(towers)} but {len(names)} "
                         f"devices {names}")
    outputs = []
    for k, device in enumerate(names):
        with tf.device(device), TowerContext(f"tower{k}", is_training=True, index=k):
            outputs.append(func())
    return outputs
