"""tensorpack's ``contrib.keras``: a whole Keras model trained by a trainer (``KerasModel``).

::

    def model_func(image):                       # called once, with keras.Input tensors
        M = keras.models.Sequential()
        M.add(KL.InputLayer(input_tensor=image))
        ...
        return M

    M = KerasModel(model_func, input_signature=[tf.TensorSpec([None, 28, 28, 1], tf.float32, 'images')],
                   target_signature=[tf.TensorSpec([None, 10], tf.float32, 'labels')],
                   input=QueueInput(dataflow))
    M.compile(optimizer=tf.train.AdamOptimizer(1e-3), loss='categorical_crossentropy',
              metrics='categorical_accuracy')
    M.fit(validation_data=test_dataflow, steps_per_epoch=..., callbacks=[ModelSaver()])

As tensorpack's: each tower computes, for output ``i``, ``keras.losses.get(loss[i])(target[i],
output[i])`` averaged and named after the loss, ``total_loss`` (their sum, plus the model's
regularization losses summed as ``regularize_cost`` in training towers), and in the main training
tower and the inference towers each metric ``keras.metrics.get(metrics[i])`` on output ``i``,
averaged and named after it; ``total_loss``, the losses, ``regularize_cost`` and the metrics are
moving summaries (with several towers: their mean over the towers that computed them).
``fit(validation_data=...)`` adds, first, an ``InferenceRunner`` with ``ScalarStats`` of the losses,
the metrics and ``total_loss`` (``validation_<name>``).

What differs, because Keras 3 builds a model from symbolic inputs only: ``get_model`` is called
once, with ``keras.Input`` tensors of ``input_signature`` (tensorpack called it with the first
tower's tensors), and every tower, training or inference, calls that model on its inputs with
``training=`` its ``is_training`` (tensorpack fed Keras's learning phase with ``KerasPhaseCallback``).
So ``get_model`` uses Keras layers and ``keras.ops`` on its inputs (TensorFlow ops on a
``keras.Input`` are Keras's error, which names the call). The model is the checkpoint's
``model/keras_model``; the optimizer may be a ``tf.compat.v1.train`` one (its Keras stand-in) or
a Keras optimizer.
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

import keras
import tensorflow as tf

from trainstack.callbacks import add_moving_summary
from trainstack.inputs import InputSource
from trainstack.towers import (
    InferenceRunner,
    ScalarStats,
    apply_default_prefetch,
    get_current_tower_context,
)
from trainstack.towers import (
    SingleCostTrainer as CoreSingleCostTrainer,
)
from trainstack.towers.tower.keras_model import metric_of_one_batch

from .aliases import get_num_gpu
from .distributed_trainers import DistributedTrainerParameterServer, DistributedTrainerReplicated
from .trainers import SimpleTrainer, SyncMultiGPUTrainerParameterServer

__all__ = ["KerasModel", "setup_keras_trainer", "TOTAL_LOSS_NAME"]

logger = logging.getLogger("trainstack.tensorpack")

TOTAL_LOSS_NAME = "total_loss"
#: tensorpack's ``regularize_cost_from_collection()`` name, for the model's regularization losses
REGULARIZE_NAME = "regularize_cost"


class KerasModelCaller:
    """The Keras model of ``get_model``, made at the first tower's build and called by every tower.

    Also the tower function's owner: the model is the checkpoint's ``model/keras_model``."""

    def __init__(self, get_model: Callable[..., Any], input_signature: Sequence[tf.TensorSpec]) -> None:
        if not callable(get_model):
            raise TypeError(f"KerasModel: get_model must be a function of the inputs returning a keras.Model, "
                            f"got {get_model!r}")
        self.get_model = get_model
        self.input_signature = list(input_signature)
        self.model: keras.Model | None = None

    def _make(self) -> keras.Model:
        inputs = [keras.Input(batch_shape=tuple(s.shape), dtype=s.dtype.name, name=s.name)
                  for s in self.input_signature]
        try:
            model = self.get_model(*inputs)
        except Exception as e:
            raise type(e)(f"KerasModel: get_model{tuple(s.name for s in self.input_signature)} failed on the "
                          "keras.Input tensors of input_signature it is called with (Keras 3 builds a model "
                          "from symbolic inputs, not from a tower's tensors: use Keras layers and keras.ops "
                          f"in it): {e}") from e
        if not isinstance(model, keras.Model):
            raise TypeError(f"KerasModel: get_model should return a keras.Model, got {model!r:.80}")
        return model

    def __call__(self, *inputs: tf.Tensor) -> list[tf.Tensor]:
        if self.model is None:
            self.model = self._make()
        ctx = get_current_tower_context()
        training = bool(ctx is not None and ctx.is_training)
        # tensorpack ran the main training tower's update ops only: the other training towers'
        # assignments (BatchNormalization's moving statistics) are made in a scope that drops them
        main = ctx is None or ctx.is_main_training_tower
        with keras.StatelessScope() if training and not main else contextlib.nullcontext():
            outputs = self.model(inputs[0] if len(inputs) == 1 else list(inputs), training=training)
        return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]

    def regularization_losses(self) -> list[tf.Tensor]:
        """The model's own losses: its layers' regularizers (``kernel_regularizer=``) and ``add_loss``."""
        return list(self.model.losses) if self.model is not None else []

    def checkpoint_objects(self) -> dict[str, Any]:
        if self.model is None:
            raise RuntimeError("KerasModel: the Keras model is made when the first tower is built "
                               "(setup_keras_trainer / KerasModel.compile); nothing to checkpoint before")
        return {"keras_model": self.model}


def _names(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"setup_keras_trainer: {what} must be a list of Keras {what} names, got {value!r}")
    return value


def _metric_fn(name: str) -> Callable[[tf.Tensor, tf.Tensor], tf.Tensor]:
    """``keras.metrics.get(name)`` as a function of one batch: a Keras 3 metric object (what most
    names give) from its initial state, without touching its variables; a function as it is."""
    metric = keras.metrics.get(name)
    return metric_of_one_batch(metric) if isinstance(metric, keras.metrics.Metric) else metric


def _named(value: tf.Tensor, name: str) -> tf.Tensor:
    """``tf.reduce_mean(value, name=name)``, checked to carry ``name`` (tensorpack's ``_check_name``)."""
    tensor = tf.reduce_mean(tf.cast(value, tf.float32), name=name)
    if tensor.name.split(":")[0].split("/")[-1] != name:
        raise ValueError(f"setup_keras_trainer: the tensor {tensor.name} does not carry the name {name!r}: "
                         "another op of the tower has it (a loss or metric named twice?)")
    return tensor


def setup_keras_trainer(trainer: Any, get_model: Callable[..., Any], input_signature: Sequence[tf.TensorSpec],
                        target_signature: Sequence[tf.TensorSpec], input: InputSource, optimizer: Any,
                        loss: list[str], metrics: list[str]) -> None:
    """Set ``trainer`` (a SingleCostTrainer) up to train the Keras model of ``get_model``.

    ``get_model(*inputs) -> keras.Model``, called once with ``keras.Input`` tensors of
    ``input_signature``; ``input``: an InputSource of the inputs then the targets; ``optimizer``: a
    ``tf.compat.v1.train`` or Keras optimizer; ``loss``, ``metrics``: lists of Keras names, one per
    output. See the module docstring for what each tower computes."""
    if not isinstance(trainer, CoreSingleCostTrainer):
        raise TypeError(f"setup_keras_trainer: trainer must be a SingleCostTrainer (SimpleTrainer, a multi-GPU "
                        f"trainer, ...), got {trainer!r:.80}")
    loss, metrics = _names(loss, "losses"), _names(metrics, "metrics")
    if not loss:
        raise ValueError("setup_keras_trainer: no loss was given")
    input_signature, target_signature = list(input_signature), list(target_signature)
    caller = KerasModelCaller(get_model, input_signature)
    loss_fns = [keras.losses.get(n) for n in loss]
    metric_fns = [_metric_fn(n) for n in metrics]
    count = len(input_signature)

    def get_cost(*tensors: tf.Tensor) -> tf.Tensor:
        ctx = get_current_tower_context()
        if ctx is None:
            raise RuntimeError("setup_keras_trainer: the cost function is a tower function; a trainer calls it "
                               "in a TowerContext")
        targets = list(tensors[count:])
        outputs = caller(*tensors[:count])
        if not len(outputs) == len(targets) == len(loss):
            raise ValueError(f"setup_keras_trainer: the model has {len(outputs)} output(s), target_signature "
                             f"{len(targets)} and loss {len(loss)}: give one target and one loss per output")
        losses = []
        for name, fn, target, output in zip(loss, loss_fns, targets, outputs):
            with tf.name_scope("keras_loss"):
                value = fn(target, output)
            losses.append(_named(value, name))
        regularizers = caller.regularization_losses() if ctx.is_training else []
        if regularizers:
            reg = tf.add_n([tf.cast(r, tf.float32) for r in regularizers], name=REGULARIZE_NAME)
            total = tf.add_n([*losses, reg], name=TOTAL_LOSS_NAME)
            add_moving_summary(reg, total, *losses)
        else:
            total = tf.add_n(losses, name=TOTAL_LOSS_NAME)
            add_moving_summary(total, *losses)
        if metrics and (ctx.is_main_training_tower or not ctx.is_training):
            values = []
            for name, fn, target, output in zip(metrics, metric_fns, targets, outputs):
                with tf.name_scope("keras_metric"):
                    value = fn(target, output)
                values.append(_named(value, name))
            add_moving_summary(*values)
        return total

    tower_func = trainer.tower_func_class(get_cost, input_signature + target_signature, owner=caller)
    trainer.setup_graph(input_signature + target_signature, input, tower_func, lambda: optimizer)


class KerasModel:
    """tensorpack's ``KerasModel``: ``compile`` then ``fit`` a Keras model with a trainer (see the module).

    ``trainer``: default ``SimpleTrainer()``, or ``SyncMultiGPUTrainerParameterServer(n)`` when
    ``get_num_gpu()`` counts ``n > 1`` GPUs; ``input``: an InputSource or a DataFlow (prefetched
    as the trainer's default: ``apply_default_prefetch``)."""

    def __init__(self, get_model: Callable[..., Any], input_signature: Sequence[tf.TensorSpec] | None = None,
                 target_signature: Sequence[tf.TensorSpec] | None = None, input: Any = None,
                 trainer: Any = None, inputs_desc: Sequence[tf.TensorSpec] | None = None,
                 targets_desc: Sequence[tf.TensorSpec] | None = None) -> None:
        if not callable(get_model):
            raise TypeError(f"KerasModel: get_model must be callable, got {get_model!r}")
        self.get_model = get_model
        inputs = input_signature if input_signature is not None else inputs_desc
        targets = target_signature if target_signature is not None else targets_desc
        if inputs is None or targets is None:
            raise ValueError("KerasModel: input_signature and target_signature are required (lists of named "
                             "tf.TensorSpec)")
        self.input_signature: Sequence[tf.TensorSpec] = inputs
        self.target_signature: Sequence[tf.TensorSpec] = targets
        if trainer is None:
            gpus = get_num_gpu()
            trainer = SimpleTrainer() if gpus <= 1 else SyncMultiGPUTrainerParameterServer(gpus)
            logger.info("KerasModel: no trainer given; %d GPU(s) counted by get_num_gpu(), so %s (tensorpack's "
                        "rule). Pass trainer= to choose.", gpus, type(trainer).__name__)
        if not isinstance(trainer, CoreSingleCostTrainer):
            raise TypeError(f"KerasModel: trainer must be a SingleCostTrainer, got {trainer!r:.80}")
        if isinstance(trainer, (DistributedTrainerReplicated, DistributedTrainerParameterServer)):
            raise TypeError(f"KerasModel: {type(trainer).__name__} is not supported (as in tensorpack); use "
                            "HorovodTrainer or a single-process trainer")
        if input is None:
            raise ValueError("KerasModel: argument 'input' is required")
        self.input = apply_default_prefetch(input, trainer)
        self.trainer = trainer
        self._stats_to_inference: list[str] | None = None

    def compile(self, optimizer: Any, loss: str | list[str], metrics: str | list[str] | None = None) -> None:
        """``optimizer``: a ``tf.compat.v1.train`` or Keras optimizer; ``loss``, ``metrics``: a Keras
        name or a list of them (one per output)."""
        loss = [loss] if isinstance(loss, str) else loss
        metrics = [] if metrics is None else [metrics] if isinstance(metrics, str) else metrics
        self._stats_to_inference = [*loss, *metrics, TOTAL_LOSS_NAME]
        setup_keras_trainer(self.trainer, get_model=self.get_model, input_signature=self.input_signature,
                            target_signature=self.target_signature, input=self.input, optimizer=optimizer,
                            loss=loss, metrics=metrics)

    def fit(self, validation_data: Any = None, **kwargs: Any) -> None:
        """Train: ``kwargs`` are ``Trainer.train_with_defaults``'s. ``validation_data`` (a DataFlow or
        InputSource): an ``InferenceRunner`` of the losses, metrics and total loss, first of the callbacks."""
        if self._stats_to_inference is None:
            raise RuntimeError("KerasModel.fit() before compile(): call compile(optimizer, loss, metrics) first")
        callbacks = list(kwargs.pop("callbacks", None) or [])
        if validation_data is not None:
            callbacks.insert(0, InferenceRunner(validation_data, ScalarStats(self._stats_to_inference)))
        self.trainer.train_with_defaults(callbacks=callbacks, **kwargs)
