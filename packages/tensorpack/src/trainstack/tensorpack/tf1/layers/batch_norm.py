"""tensorpack's ``BatchNorm``: batch normalization whose moving averages the training step updates.

As in tensorpack 0.11:

- ``training`` defaults to the tower's ``is_training``: batch statistics in training towers,
  the moving averages ``mean/EMA`` and ``variance/EMA`` in inference towers (``training=False``
  in a training tower uses the moving averages too: fine-tuning a loaded BatchNorm);
- ``momentum`` 0.9 (``decay``), ``epsilon`` 1e-5; variables ``gamma`` (ones), ``beta`` (zeros),
  ``mean/EMA`` (zeros) and ``variance/EMA`` (ones), the last two not trainable;
- the moving averages are updated inside the training step, ``ema = ema - (ema - stat) * (1 -
  momentum)``, by the main training tower only (and by an inference tower told ``training=True``),
  tensorpack's ``ema_update='internal'``. ``'default'`` and ``'collection'`` mean the same here: TF1's
  ``UPDATE_OPS`` collection does not exist, and the update lands in the same step as tensorpack's
  ``RunUpdateOps`` ran it. ``'skip'`` does not update;
- 4D inputs go through TensorFlow's fused kernel (its epsilon at least 1.001e-5, and the variance
  it averages is the batch's unbiased one, n/(n-1) times the one it normalizes with), 2D inputs
  through ``tf.nn.moments`` (biased variance), as ``tf.layers.BatchNormalization`` did;
- ``virtual_batch_size`` normalizes each group of that many samples by its own statistics
  (the moving averages follow the first group), tensorpack's Ghost BatchNorm.

Under ``SyncMultiGPUTrainerReplicated`` the update writes the first device's copy (the one
checkpoints and predictors read); the trainer copies it to the others after each epoch.

``sync_statistics='nccl'`` (tensorpack's SyncBN) normalizes every training tower by the
statistics of all the towers' batches, ``E[x]`` and ``E[x^2]`` averaged across the towers by
the ``tf.distribute`` replica context the towers are built in (``SyncMultiGPUTrainerReplicated``'s;
its cross-device ops, NCCL on GPUs): every tower must call the layer, in the same order, with the
same batch size. The variance is ``E[x^2] - E[x]^2`` (biased), also for the moving average.
With one tower it is the plain batch statistics (a warning); with towers built outside a replica
context (trainers that build them one by one), an error.

``sync_statistics='horovod'`` normalizes by the statistics of all the worker processes' batches:
``E[x]`` and ``E[x^2]`` averaged by the tower's ``cross_worker_mean`` (``TowerContext``), which
``HorovodTrainer`` sets to its Horovod all-reduce (this layer imports no Horovod); every process must
call the layer, in the same order, with the same batch size. Each process updates its moving averages
from the same all-reduced statistics, so they stay equal. A tower without ``cross_worker_mean``
(another trainer) is an error naming HorovodTrainer.
"""
from __future__ import annotations

import logging
from typing import Any

import tensorflow as tf

from .args import layout, tflayer_args
from .context import get_variable, layer_label, tower_of
from .registry import attach_variables, layer_register

__all__ = ["BatchNorm"]

logger = logging.getLogger("trainstack.tensorpack")

EMA_UPDATES = ("default", "collection", "internal", "skip")
_warned_frozen: set = set()
_warned_single: set = set()


def _ema(variable: Any, value: tf.Tensor, momentum: float) -> Any:
    value = tf.cast(value, variable.dtype)
    return variable.assign_sub((variable - value) * (1.0 - momentum), read_value=False)


@layer_register()
@tflayer_args(args_names=[], name_mapping={"use_bias": "center", "use_scale": "scale",
                                            "gamma_init": "gamma_initializer", "decay": "momentum",
                                            "use_local_stat": "training"})
def BatchNorm(inputs: tf.Tensor, axis: int | None = None, *, training: bool | None = None,  # noqa: N802
              momentum: float = 0.9, epsilon: float = 1e-5, center: bool = True, scale: bool = True,
              beta_initializer: Any = tf.compat.v1.zeros_initializer(),
              gamma_initializer: Any = tf.compat.v1.ones_initializer(), virtual_batch_size: int | None = None,
              data_format: str = "channels_last", ema_update: str = "default",
              sync_statistics: str | None = None) -> tf.Tensor:
    """Batch normalization, ``BatchNorm('bn', x, ...)`` (see the module docstring)."""
    tower = tower_of("BatchNorm")
    label = layer_label("BatchNorm")
    training = tower.is_training if training is None else bool(training)
    sync = None if sync_statistics is None else str(sync_statistics).lower()
    if sync not in (None, "nccl", "horovod"):
        raise ValueError(f"{label}: sync_statistics must be None, 'nccl' (the statistics of all towers, under "
                         f"SyncMultiGPUTrainerReplicated) or 'horovod' (of all processes, under HorovodTrainer); "
                         f"got {sync_statistics!r}")
    if ema_update not in EMA_UPDATES:
        raise ValueError(f"{label}: ema_update must be one of {list(EMA_UPDATES)}, got {ema_update!r}")
    fmt = layout(data_format, "BatchNorm")
    shape = inputs.shape.as_list()
    ndims = len(shape)
    if ndims not in (2, 4):
        raise ValueError(f"{label} takes a 2D or 4D input, got shape {inputs.shape}")
    if axis is None:
        axis = 1 if ndims == 2 or fmt == "NCHW" else 3
    if axis not in ((1,) if ndims == 2 else (1, 3)):
        raise ValueError(f"{label}: axis={axis} is not a channel axis of a {ndims}D input")
    channels = shape[axis]
    if channels is None:
        raise ValueError(f"{label}: the channel dimension must be known, got shape {inputs.shape}")
    if not training:
        virtual_batch_size = None
        if tower.is_training and tower.is_main_training_tower and label not in _warned_frozen:
            _warned_frozen.add(label)
            logger.warning("%s uses its moving mean/variance in a training tower (training=False).", label)
    update = training and (tower.is_main_training_tower or not tower.is_training) and ema_update != "skip"

    gamma = get_variable("BatchNorm", "gamma", [channels], gamma_initializer) if scale else None
    beta = get_variable("BatchNorm", "beta", [channels], beta_initializer) if center else None
    moving_mean = get_variable("BatchNorm", "mean/EMA", [channels], tf.compat.v1.zeros_initializer(),
                               trainable=False)
    moving_var = get_variable("BatchNorm", "variance/EMA", [channels], tf.compat.v1.ones_initializer(),
                              trainable=False)
    gamma_t = gamma if gamma is not None else tf.ones([channels])
    beta_t = beta if beta is not None else tf.zeros([channels])

    if sync and training:
        if virtual_batch_size:
            raise ValueError(f"{label}: sync_statistics and virtual_batch_size cannot be used together")
        synced = _synced if sync == "nccl" else _synced_over_workers
        out, mean, variance = synced(inputs, axis, gamma_t, beta_t, epsilon, tower, label)
    elif virtual_batch_size:
        out, mean, variance = _ghost(inputs, axis, virtual_batch_size, gamma_t, beta_t, epsilon)
    elif ndims == 4:
        kernel_format = "NCHW" if axis == 1 else "NHWC"
        if training:
            out, mean, variance = tf.compat.v1.nn.fused_batch_norm(
                inputs, gamma_t, beta_t, epsilon=epsilon, data_format=kernel_format, is_training=True)
        else:
            out, _, _ = tf.compat.v1.nn.fused_batch_norm(
                inputs, gamma_t, beta_t, mean=moving_mean, variance=moving_var, epsilon=epsilon,
                data_format=kernel_format, is_training=False)
    elif training:
        mean, variance = tf.nn.moments(inputs, [0])
        out = tf.nn.batch_normalization(inputs, mean, variance, beta_t, gamma_t, epsilon)
    else:
        out = tf.nn.batch_normalization(inputs, moving_mean, moving_var, beta_t, gamma_t, epsilon)

    if update:
        with tf.control_dependencies([_ema(moving_mean, mean, momentum), _ema(moving_var, variance, momentum)]):
            out = tf.identity(out, name="output")
    else:
        out = tf.identity(out, name="output")
    return attach_variables(out, moving_mean=moving_mean, mean=moving_mean, moving_variance=moving_var,
                            variance=moving_var, gamma=gamma, beta=beta)


def _synced(inputs: tf.Tensor, axis: int, gamma: Any, beta: Any, epsilon: float, tower: Any,
            label: str) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """SyncBN: normalized by ``E[x]``, ``E[x^2] - E[x]^2`` averaged over the towers of the step."""
    mean, mean_square = _moments(inputs, axis)
    replica = tf.distribute.get_replica_context()
    if replica is None:
        pass  # a strategy's cross-replica context (a trainer tracing its variables' creation): the local batch
    elif replica.num_replicas_in_sync > 1:
        mean, mean_square = replica.all_reduce(tf.distribute.ReduceOp.MEAN, [mean, mean_square])
    elif tower.index > 0:
        raise ValueError(f"{label}: sync_statistics='nccl' needs the towers built in a tf.distribute replica context "
                         f"(SyncMultiGPUTrainerReplicated); this trainer builds tower {tower.name!r} outside one, so "
                         "the towers' statistics cannot be shared")
    elif label not in _warned_single:
        _warned_single.add(label)
        logger.warning("%s: sync_statistics='nccl' is used with only one tower.", label)
    return _normalize(inputs, axis, mean, mean_square, gamma, beta, epsilon)


def _synced_over_workers(inputs: tf.Tensor, axis: int, gamma: Any, beta: Any, epsilon: float, tower: Any,
                         label: str) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """SyncBN across processes: ``E[x]``, ``E[x^2]`` averaged by the tower's ``cross_worker_mean``."""
    if tower.cross_worker_mean is None:
        raise ValueError(f"{label}: sync_statistics='horovod' needs HorovodTrainer, which shares the statistics "
                         f"across its processes; tower {tower.name!r} was built by a trainer without worker "
                         "processes (use sync_statistics='nccl' for the towers of one process, or None)")
    mean, mean_square = tower.cross_worker_mean(list(_moments(inputs, axis)))
    return _normalize(inputs, axis, mean, mean_square, gamma, beta, epsilon)


def _moments(inputs: tf.Tensor, axis: int) -> tuple[tf.Tensor, tf.Tensor]:
    """``E[x]`` and ``E[x^2]`` per channel."""
    ndims = inputs.shape.rank
    reduce = [0] if ndims == 2 else ([0, 2, 3] if axis == 1 else [0, 1, 2])
    return tf.reduce_mean(inputs, reduce), tf.reduce_mean(tf.square(inputs), reduce)


def _normalize(inputs: tf.Tensor, axis: int, mean: tf.Tensor, mean_square: tf.Tensor, gamma: Any, beta: Any,
               epsilon: float) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """``inputs`` normalized by ``mean`` and the biased variance ``E[x^2] - E[x]^2``."""
    ndims = inputs.shape.rank
    variance = mean_square - tf.square(mean)
    shape = [1] * ndims
    shape[axis] = inputs.shape[axis]
    out = tf.nn.batch_normalization(inputs, tf.reshape(mean, shape), tf.reshape(variance, shape),
                                    tf.reshape(beta, shape), tf.reshape(gamma, shape), epsilon)
    return out, mean, variance


def _ghost(inputs: tf.Tensor, axis: int, size: int, gamma: Any, beta: Any,
           epsilon: float) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Ghost BatchNorm: each group of ``size`` consecutive samples normalized by its own (biased)
    statistics; the statistics of the first group returned for the moving averages."""
    ndims = inputs.shape.rank
    channels = inputs.shape[axis]
    reduce = [0] if ndims == 2 else ([0, 2, 3] if axis == 1 else [0, 1, 2])
    grouped = tf.reshape(inputs, tf.concat([[-1, size], tf.shape(inputs)[1:]], axis=0))
    per_group = [1] * (ndims + 1)
    per_group[axis + 1] = channels
    mean, variance = tf.nn.moments(grouped, [a + 1 for a in reduce], keepdims=True)
    out = tf.nn.batch_normalization(grouped, mean, variance, tf.reshape(beta, per_group),
                                    tf.reshape(gamma, per_group), epsilon)
    return (tf.reshape(out, tf.shape(inputs)), tf.reshape(mean[0], [channels]),
            tf.reshape(variance[0], [channels]))
