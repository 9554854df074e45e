"""KerasModelDesc: a ``keras.Model`` with a loss and an optimizer, trained as a ModelDesc.

::

    inputs = keras.Input((4,), name="x")
    model = keras.Model(inputs, keras.layers.Dense(3)(inputs))
    desc = ModelDesc.from_keras(model, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                                optimizer=keras.optimizers.SGD(0.1), metrics=["accuracy"])
    launch_train_with_config(TrainConfig(model=desc, dataflow=batches), SimpleTrainer())

A datapoint is the model's inputs then the label (``[x, label]``). The adapter's
``inputs()`` are the model's inputs (``model.inputs`` of a functional or Sequential
model; ``inputs=`` for a subclassed one) and a ``label`` spec derived from the loss.
Its tower function calls the model (``training=`` the tower's ``is_training``) and
returns the loss plus the model's own losses (regularizers, ``add_loss``), as
``model.fit`` minimizes; it names ``output`` (the model's prediction, for
predictors and export), ``loss`` and each metric, and reports the loss and the
metrics with ``add_moving_summary``.

The model is built once and called by every tower. Its variables, made when a
functional model was defined, are made again (with their current values) where the
first tower is built, so that a trainer's placement applies to them (a replica per
device, a parameter server, ...); the model object stays the one trained. The
optimizer is made anew from its config in ``optimizer()``, which trainers call
where its slots belong. A compiled model needs neither ``loss=`` nor ``optimizer=``:
those of ``model.compile`` are used.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from trainstack.callbacks import add_moving_summary, tf_private

from .model_desc import ModelDesc

__all__ = ["KerasModelDesc", "metric_of_one_batch"]

#: Keras's losses whose target has the prediction's shape and a float dtype
_DENSE_TARGET_LOSSES = (
    "mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error",
    "mean_squared_logarithmic_error", "huber", "log_cosh", "kl_divergence", "poisson",
    "cosine_similarity", "hinge", "squared_hinge", "categorical_hinge", "binary_crossentropy",
    "binary_focal_crossentropy", "categorical_crossentropy", "categorical_focal_crossentropy",
)
#: what the metric name "accuracy" means after each loss (as in model.compile)
_ACCURACY_FOR = {
    "sparse_categorical_crossentropy": keras.metrics.SparseCategoricalAccuracy,
    "categorical_crossentropy": keras.metrics.CategoricalAccuracy,
    "binary_crossentropy": keras.metrics.BinaryAccuracy,
}


class KerasModelDesc(ModelDesc):
    """A ModelDesc made from a ``keras.Model``, a loss and an optimizer (see the module docstring).

    ``loss``: a Keras loss (a name such as ``'sparse_categorical_crossentropy'``, a
    ``keras.losses.Loss``, or a function ``fn(y_true, y_pred)``); ``optimizer``: a Keras
    optimizer or its name; both default to those of ``model.compile``. ``metrics``: names,
    ``keras.metrics.Metric`` instances or functions ``fn(y_true, y_pred)``, each computed on
    the step's batch and reported as a moving average under its name. ``inputs``: the
    input specs (required for a subclassed model, whose inputs Keras does not know);
    ``label``: the target's spec, when the loss does not tell it.
    """

    def __init__(self, model: keras.Model, loss: Any = None, optimizer: Any = None,
                 metrics: Sequence[Any] | None = None, inputs: Sequence[tf.TensorSpec] | None = None,
                 label: tf.TensorSpec | None = None) -> None:
        if not isinstance(model, keras.Model):
            raise TypeError(f"ModelDesc.from_keras takes a keras.Model, got {model!r}; a ModelDesc of "
                            "your own layers subclasses ModelDesc instead")
        if loss is None or optimizer is None:
            missing = [n for n, v in (("loss", loss), ("optimizer", optimizer)) if v is None]
            if not getattr(model, "compiled", False):
                raise ValueError(
                    f"ModelDesc.from_keras({model.name!r}): no {' and no '.join(missing)} given and the "
                    "model is not compiled. Pass them, e.g. loss='sparse_categorical_crossentropy', "
                    "optimizer=keras.optimizers.Adam(1e-3), or call model.compile(loss=..., "
                    "optimizer=...) first")
            loss = model.loss if loss is None else loss
            optimizer = model.optimizer if optimizer is None else optimizer
            if loss is None or optimizer is None:
                missing = [n for n, v in (("loss", loss), ("optimizer", optimizer)) if v is None]
                raise ValueError(f"ModelDesc.from_keras({model.name!r}): model.compile() was given no "
                                 f"{' and no '.join(missing)}; pass {' and '.join(f'{n}=' for n in missing)}")
            if metrics is None:
                metrics = model.get_compile_config().get("metrics")
        self.model = model
        self._loss_fn, loss_kind = _resolve_loss(loss, model.name)
        self._optimizer_config = _optimizer_config(optimizer, model.name)
        self._input_specs = _input_specs(model, inputs)
        self._call_structure = model.input if inputs is None and _is_functional(model) else None
        self._label_spec = label if label is not None else _label_spec(
            model, self._input_specs, loss_kind, loss)
        if not isinstance(self._label_spec, tf.TensorSpec) or not self._label_spec.name:
            raise TypeError(f"ModelDesc.from_keras(label=...) must be a named tf.TensorSpec, "
                            f"e.g. tf.TensorSpec([None], tf.int32, 'label'); got {self._label_spec!r}")
        self._metrics = _resolve_metrics(metrics or [], loss_kind, model.name)
        names = [s.name for s in self._input_specs] + [self._label_spec.name]
        taken = {"loss", "output", *names}
        clashes = [n for n, _ in self._metrics if n in taken]
        if clashes or len({n for n, _ in self._metrics}) < len(self._metrics):
            raise ValueError(f"ModelDesc.from_keras: metric names {[n for n, _ in self._metrics]} must be "
                             f"distinct and differ from the inputs' and from 'loss' and 'output' ({clashes})")
        self._adopted = False

    # -- ModelDesc ------------------------------------------------------------------------------
    def inputs(self) -> list[tf.TensorSpec]:
        return [*self._input_specs, self._label_spec]

    def build_graph(self, *tensors: tf.Tensor) -> tf.Tensor:
        if not self._adopted:
            self._adopt_variables()
        *features, label = tensors
        if self._call_structure is not None:
            model_input = keras.tree.pack_sequence_as(self._call_structure, features)
        else:
            model_input = features[0] if len(features) == 1 else list(features)
        prediction = self.model(model_input, training=self.training)
        if not tf.is_tensor(prediction):
            raise TypeError(f"ModelDesc.from_keras({self.model.name!r}): the model returned "
                            f"{type(prediction).__name__}, not one tensor; a model with several outputs "
                            "(one loss each) needs a ModelDesc of its own that combines them")
        prediction = tf.identity(prediction, name="output")
        loss = tf.cast(self._loss_fn(label, prediction), tf.float32)
        if loss.shape.rank:  # a loss function returning one value per datapoint: their mean
            loss = tf.reduce_mean(loss)
        extra = self.model.losses
        if extra:
            loss = loss + tf.add_n([tf.cast(x, tf.float32) for x in extra])
        loss = tf.identity(loss, name="loss")
        values = [tf.identity(tf.cast(fn(label, prediction), tf.float32), name=name)
                  for name, fn in self._metrics]
        add_moving_summary(loss, *values)
        return loss

    def optimizer(self) -> Any:
        return keras.optimizers.deserialize(self._optimizer_config)

    def checkpoint_objects(self) -> dict[str, Any]:
        """The Keras model under ``keras_model`` (keys by Keras's tracking: a functional
        model's layers by position, a subclassed model's by attribute)."""
        return {"keras_model": self.model}

    # -- the variables ----------------------------------------------------------------------------
    def _adopt_variables(self) -> None:
        """Make the model's existing variables again, with their values, in the scope the first
        tower is built in (the trainer's strategy or placement), outside the traced function."""
        self._adopted = True
        with tf.init_scope():
            for variable in self.model.variables:
                tf_private.reinitialize_variable(variable)


def _is_functional(model: keras.Model) -> bool:
    try:
        return bool(model.inputs)
    except (AttributeError, ValueError):  # subclassed, or a Sequential model without an Input
        return False


def _input_specs(model: keras.Model, inputs: Sequence[tf.TensorSpec] | None) -> list[tf.TensorSpec]:
    if inputs is not None:
        specs = [inputs] if isinstance(inputs, tf.TensorSpec) else list(inputs)
        if not specs or not all(isinstance(s, tf.TensorSpec) and s.name for s in specs):
            raise TypeError(f"ModelDesc.from_keras(inputs=...) must be named tf.TensorSpecs, e.g. "
                            f"[tf.TensorSpec([None, 4], tf.float32, 'x')]; got {inputs!r}")
        return specs
    if not _is_functional(model):
        raise ValueError(
            f"ModelDesc.from_keras({model.name!r}): Keras does not know the inputs of this "
            f"{type(model).__name__} (a subclassed model, or a Sequential model without keras.Input); "
            "pass inputs=[tf.TensorSpec([None, ...], dtype, 'name'), ...] in the order model.call takes them")
    return [tf.TensorSpec(t.shape, t.dtype, t.name) for t in keras.tree.flatten(model.input)]


def _resolve_loss(loss: Any, model_name: str) -> tuple[Callable[..., Any], str | None]:
    """The loss as ``fn(y_true, y_pred)`` and the name of the Keras loss function it is (or None)."""
    if isinstance(loss, (list, tuple, dict)):
        raise TypeError(f"ModelDesc.from_keras({model_name!r}): a loss per output ({loss!r}) is not "
                        "supported; give one loss for the model's one output, or write a ModelDesc "
                        "whose build_graph combines the outputs' losses")
    if isinstance(loss, str):
        try:
            fn = keras.losses.get(loss)
        except ValueError:
            raise ValueError(f"ModelDesc.from_keras({model_name!r}): unknown loss {loss!r}; give a Keras "
                             "loss name (e.g. 'sparse_categorical_crossentropy', 'mse'), a "
                             "keras.losses.Loss or a function fn(y_true, y_pred)") from None
        return fn, getattr(fn, "__name__", None)
    if isinstance(loss, keras.losses.Loss):
        return _unscaled(loss), getattr(getattr(loss, "fn", None), "__name__", None)
    if callable(loss):
        name = getattr(loss, "__name__", None)
        return loss, name if getattr(keras.losses, name or "", None) is loss else None
    raise TypeError(f"ModelDesc.from_keras({model_name!r}): loss {loss!r} is of an unsupported kind "
                    f"({type(loss).__name__}); give a Keras loss name, a keras.losses.Loss or a function "
                    "fn(y_true, y_pred)")


def _unscaled(loss: keras.losses.Loss) -> Callable[[tf.Tensor, tf.Tensor], tf.Tensor]:
    """``loss`` without Keras's division by the number of replicas under a ``tf.distribute``
    strategy (``model.fit`` sums the replicas' gradients; trainstack's trainers average them):
    the per-datapoint values of a copy with ``reduction='none'``, then the mean (or the sum)."""
    mean = loss.reduction in ("sum_over_batch_size", "mean", "mean_with_sample_weight")
    if not mean and loss.reduction != "sum":
        return loss
    try:
        per_datapoint = type(loss).from_config({**loss.get_config(), "reduction": "none"})
    except (TypeError, ValueError, KeyError):  # a Loss subclass that cannot be rebuilt from its config
        if not mean:  # Keras divides mean losses only
            return loss

        def rescaled(y_true: tf.Tensor, y_pred: tf.Tensor) -> tf.Tensor:
            value = loss(y_true, y_pred)
            return value * tf.cast(tf.distribute.get_strategy().num_replicas_in_sync, value.dtype)

        return rescaled
    reduce = tf.reduce_mean if mean else tf.reduce_sum

    def reduced(y_true: tf.Tensor, y_pred: tf.Tensor) -> tf.Tensor:
        return reduce(per_datapoint(y_true, y_pred))

    return reduced


def _optimizer_config(optimizer: Any, model_name: str) -> dict[str, Any]:
    """The optimizer's serialized config: ``optimizer()`` makes it anew where a trainer asks."""
    if isinstance(optimizer, str):
        try:
            optimizer = keras.optimizers.get(optimizer)
        except ValueError:
            raise ValueError(f"ModelDesc.from_keras({model_name!r}): unknown optimizer {optimizer!r}; give "
                             "a Keras optimizer or its name ('adam', 'sgd', ...)") from None
    if not isinstance(optimizer, keras.optimizers.Optimizer):
        raise TypeError(f"ModelDesc.from_keras({model_name!r}): optimizer must be a Keras optimizer "
                        f"(keras.optimizers.Adam(1e-3)) or its name, got {optimizer!r}")
    return keras.optimizers.serialize(optimizer)


def _label_spec(model: keras.Model, specs: list[tf.TensorSpec], loss_kind: str | None,
                loss: Any) -> tf.TensorSpec:
    """The target's spec, from the loss and the prediction's shape."""
    if loss_kind != "sparse_categorical_crossentropy" and loss_kind not in _DENSE_TARGET_LOSSES:
        raise ValueError(f"ModelDesc.from_keras({model.name!r}): cannot tell the label's shape and dtype "
                         f"from loss {loss!r}; pass label=tf.TensorSpec(shape, dtype, 'label') (the "
                         "datapoint's last component)")
    if _is_functional(model):
        shape = model.outputs[0].shape
    else:
        shape = model.compute_output_spec(*[keras.KerasTensor(s.shape, s.dtype.name) for s in specs]).shape
    if loss_kind == "sparse_categorical_crossentropy":
        return tf.TensorSpec(shape[:-1], tf.int32, "label")
    return tf.TensorSpec(shape, tf.float32, "label")


def _resolve_metrics(metrics: Sequence[Any], loss_kind: str | None,
                     model_name: str) -> list[tuple[str, Callable[[tf.Tensor, tf.Tensor], tf.Tensor]]]:
    """Each metric as ``(name, fn(y_true, y_pred) -> the value on this batch)``."""
    if isinstance(metrics, (str, dict)) or not isinstance(metrics, (list, tuple)):
        raise TypeError(f"ModelDesc.from_keras({model_name!r}): metrics must be a list, e.g. "
                        f"['accuracy'], got {metrics!r}")
    resolved = []
    for metric in metrics:
        name = metric if isinstance(metric, str) else None
        if metric in ("accuracy", "acc"):
            if loss_kind not in _ACCURACY_FOR:
                raise ValueError(f"ModelDesc.from_keras({model_name!r}): metric {metric!r} depends on the "
                                 f"loss, and loss {loss_kind!r} does not say which accuracy; name it "
                                 f"({', '.join(repr(c().name) for c in _ACCURACY_FOR.values())})")
            metric = _ACCURACY_FOR[loss_kind]()
        elif isinstance(metric, (str, dict)):
            try:
                metric = keras.metrics.get(metric)
            except ValueError:
                raise ValueError(f"ModelDesc.from_keras({model_name!r}): unknown metric {metric!r}; give a "
                                 "Keras metric name, a keras.metrics.Metric or a function "
                                 "fn(y_true, y_pred)") from None
        if isinstance(metric, keras.metrics.Metric):
            resolved.append((name or metric.name, metric_of_one_batch(metric)))
        elif callable(metric):
            resolved.append((name or metric.__name__, _batch_mean(metric)))
        else:
            raise TypeError(f"ModelDesc.from_keras({model_name!r}): metric {metric!r} is of an unsupported "
                            "kind; give a Keras metric name, a keras.metrics.Metric or a function "
                            "fn(y_true, y_pred)")
    return resolved


def metric_of_one_batch(metric: keras.metrics.Metric) -> Callable[[tf.Tensor, tf.Tensor], tf.Tensor]:
    """``metric`` as a function of one batch, ``f(y_true, y_pred)``: its value from its reset
    state, computed statelessly (no variable of the metric is touched, so towers can share it)."""
    metric.reset_state()
    initial = [np.array(v.numpy()) for v in metric.variables]

    def value(y_true: tf.Tensor, y_pred: tf.Tensor) -> tf.Tensor:
        state = metric.stateless_update_state([tf.constant(v) for v in initial], y_true, y_pred)
        return metric.stateless_result(state)

    return value


def _batch_mean(fn: Callable[..., Any]) -> Callable[[tf.Tensor, tf.Tensor], tf.Tensor]:
    def value(y_true: tf.Tensor, y_pred: tf.Tensor) -> tf.Tensor:
        return tf.reduce_mean(tf.cast(fn(y_true, y_pred), tf.float32))

    return value
