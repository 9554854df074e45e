"""TF1 optimizers: ``tf.compat.v1.train.*Optimizer`` as Keras optimizers that run TF1's kernels.

tensorpack's models return ``tf.train.AdamOptimizer(lr)`` (``from tensorpack import tfv1
as tf``: ``tf.compat.v1.train``) from ``optimizer()``. A TF1 optimizer cannot train
trainstack's step as it is: its slots are graph-only TF1 variables that no
``tf.train.Checkpoint`` of the trainer reaches, its hyperparameters are Python numbers a
traced step captures as constants (a ``ScheduledHyperParamSetter`` could not change
them), and the trainers (mixed precision, strategies, ``skip_nonfinite_steps``) drive a
Keras optimizer. So :func:`keras_optimizer_for` gives, for each TF1 optimizer, one Keras
optimizer that stands for it (the same object every time it is asked about the same TF1
optimizer): the core meets it where it first sees an optimizer
(the tensorpack layer's ModelDesc and trainers, through :func:`adapt_optimizer`), and from
there on trains, checkpoints and schedules the stand-in like any Keras optimizer.

The stand-in applies TF1's rule, not Keras' look-alike: its ``update_step`` runs the very
kernels the TF1 optimizer runs (``ResourceApplyAdam``, ``ResourceApplyMomentum``,
``ResourceApplyGradientDescent``, ``ResourceApplyRMSProp``, ``ResourceScatterAdd``; for a
sparse gradient, RMSProp's sparse kernels on a CPU), and otherwise the TF1 code's or
kernel's expressions in ops every device has (TF1's sparse Momentum and RMSProp kernels
exist on the CPU only), with TF1's defaults and slots:

=====================================  ===============================================================
TF1 optimizer (defaults)               rule per step ``t`` (``g`` the gradient; slots checkpointed)
=====================================  ===============================================================
``AdamOptimizer(0.001, beta1=0.9,      ``m = b1*m + (1-b1)*g``, ``v = b2*v + (1-b2)*g*g``,
beta2=0.999, epsilon=1e-8)``           ``var -= lr*sqrt(1-b2^t)/(1-b1^t) * m/(sqrt(v)+epsilon)``
                                       (Keras' Adam: epsilon 1e-7)
``MomentumOptimizer(lr, momentum,      ``accum = momentum*accum + g``; ``var -= lr*accum``; with
use_nesterov=False)``                  nesterov ``var -= lr*g + lr*momentum*accum`` (a new ``lr``
                                       scales the whole accumulated velocity, unlike Keras' SGD)
``GradientDescentOptimizer(lr)``       ``var -= lr*g``
``RMSPropOptimizer(lr, decay=0.9,      ``ms = decay*ms + (1-decay)*g*g`` (``ms`` starts at ONE),
momentum=0.0, epsilon=1e-10,           ``mom = momentum*mom + lr*g/sqrt(ms+epsilon)``, ``var -= mom``;
centered=False)``                      centered: ``mg = decay*mg + (1-decay)*g``, ``ms - mg*mg``
                                       in place of ``ms``
=====================================  ===============================================================

Adam's step count ``t`` advances once per ``apply_gradients`` (so one optimizer minimizing
two losses per step, as tensorpack's GAN trainer does, counts two), and ``b1^t``, ``b2^t``
are TF1's running products, checkpointed as TF1's ``beta1_power``/``beta2_power`` were:
dense and sparse, the stand-ins give TF1's own optimizer's float32 results to the bit (on
the CPU; tested against TF1's optimizers in traced steps). A sparse gradient
(``tf.IndexedSlices``, an embedding's) takes TF1's sparse path: duplicate indices summed,
only the rows it names updated by Momentum/RMSProp/GradientDescent, every row by Adam.

Hyperparameters: a number is the stand-in's own (the learning rate a Keras variable that
``ScheduledHyperParamSetter('learning_rate', ...)`` sets); a ``tf.Variable`` (tensorpack's
``tf.get_variable('learning_rate', ...)``) is read at every step, so assigning it changes
training, and is checkpointed with the optimizer; a callable (an eager
``tf.compat.v1.train.exponential_decay(...)``) is called at every step. Other TF1
optimizers (Adagrad, Ftrl, ...) and subclasses raise a TypeError naming the Keras one to
use. The stand-ins' classes are this module's, not ``keras.optimizers.Adam`` & co.
"""
from __future__ import annotations

import numbers
import weakref
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from trainstack.callbacks.variables import is_variable

__all__ = ["keras_optimizer_for", "adapt_optimizer", "apply_grad_processors", "TF1Optimizer", "TF1Adam", "TF1Momentum", "TF1GradientDescent",
           "TF1RMSProp", "SUPPORTED"]


# -- hyperparameters ------------------------------------------------------------------------------
def _hyper(value: Any, what: str) -> Any:
    """A TF1 hyperparameter as the stand-in keeps it: a float, a variable, or a callable."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be a number, a tf.Variable or a callable, got {value!r}")
    if isinstance(value, (numbers.Real, np.floating, np.integer)):
        return float(value)
    if is_variable(value) or callable(value):
        return value
    if isinstance(value, tf.Tensor):
        if tf.is_symbolic_tensor(value):
            raise TypeError(f"{what} is a graph tensor ({value.name}); in TensorFlow 2 give the TF1 "
                            "optimizer a number, a tf.Variable or a callable")
        return float(value.numpy())
    raise TypeError(f"{what} must be a number, a tf.Variable or a callable, got {value!r:.80}")


def _read(value: Any, dtype: tf.DType) -> tf.Tensor:
    """A hyperparameter's value at this step, as ``dtype``."""
    if callable(value) and not is_variable(value):
        value = value()
    return tf.cast(value, dtype)


def _on_cpu(var: Any) -> bool:
    """Whether ``var`` lives on a CPU (where TF1's sparse kernels exist)."""
    return tf.DeviceSpec.from_string(var.device or "").device_type == "CPU"


def _deduplicate(grad: tf.IndexedSlices) -> tuple[tf.Tensor, tf.Tensor]:
    """``(values, indices)`` with each index once, its values summed (TF1's
    ``_deduplicate_indexed_slices``)."""
    unique, positions = tf.unique(grad.indices)
    values = tf.math.unsorted_segment_sum(grad.values, positions, tf.shape(unique)[0])
    return values, unique


# -- the stand-ins ----------------------------------------------------------------------------------
class TF1Optimizer(keras.optimizers.Optimizer):
    """Base of the stand-ins: a Keras optimizer whose ``learning_rate`` is the TF1 optimizer's.

    ``hypers`` are the rule's other hyperparameters (``beta1``, ``momentum``, ...), each
    a float, a variable (checkpointed with the optimizer) or a callable (see the module doc).
    """

    #: the TF1 class this stands for (its name in errors and reprs)
    tf1_name = "Optimizer"

    def __init__(self, learning_rate: Any, *, name: str, use_locking: bool = False, **hypers: Any) -> None:
        lr = _hyper(learning_rate, f"{self.tf1_name}(learning_rate=)")
        super().__init__(learning_rate=(lambda: lr) if is_variable(lr) else lr, name=name)
        self.use_locking = bool(use_locking)
        self._hypers = {key: _hyper(value, f"{self.tf1_name}({key}=)") for key, value in hypers.items()}
        # variables given as hyperparameters are checkpointed with the optimizer (as TF1 graphs saved them)
        if is_variable(lr):
            self._tf1_learning_rate = lr
        for key, value in self._hypers.items():
            if is_variable(value):
                setattr(self, f"_tf1_{key}", value)

    def hyper(self, key: str, dtype: tf.DType) -> tf.Tensor:
        """Hyperparameter ``key`` at this step, as ``dtype``."""
        return _read(self._hypers[key], dtype)

    def _index(self, variable: Any) -> int:
        return self._get_variable_index(variable)

    def update_step(self, gradient: Any, variable: Any, learning_rate: Any) -> None:
        dtype = tf.as_dtype(variable.dtype)
        lr = _read(learning_rate, dtype)
        if isinstance(gradient, tf.IndexedSlices):
            values = tf.cast(gradient.values, dtype)
            self._apply_sparse(tf.IndexedSlices(values, gradient.indices, gradient.dense_shape),
                               variable, lr, dtype)
        else:
            self._apply_dense(tf.cast(gradient, dtype), variable, lr, dtype)

    def _apply_dense(self, grad: tf.Tensor, var: Any, lr: tf.Tensor, dtype: tf.DType) -> None:
        raise NotImplementedError

    def _apply_sparse(self, grad: tf.IndexedSlices, var: Any, lr: tf.Tensor, dtype: tf.DType) -> None:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update({k: v for k, v in self._hypers.items() if isinstance(v, float)})
        config["use_locking"] = self.use_locking
        return config

    def __repr__(self) -> str:
        hypers = ", ".join(f"{k}={v!r}" for k, v in self._hypers.items())
        return f"<{type(self).__name__} for tf.compat.v1.train.{self.tf1_name}({hypers})>"


class TF1GradientDescent(TF1Optimizer):
    """``tf.compat.v1.train.GradientDescentOptimizer``: ``var -= lr * g``."""

    tf1_name = "GradientDescentOptimizer"

    def _apply_dense(self, grad: tf.Tensor, var: Any, lr: tf.Tensor, dtype: tf.DType) -> None:
        tf.raw_ops.ResourceApplyGradientDescent(var=var.handle, alpha=lr, delta=grad,
                                                use_locking=self.use_locking)

    def _apply_sparse(self, grad: tf.IndexedSlices, var: Any, lr: tf.Tensor, dtype: tf.DType) -> None:
        # TF1 scatters -lr*g without deduplicating (the scatter sums duplicates)
        tf.raw_ops.ResourceScatterAdd(resource=var.handle, indices=grad.indices, updates=-grad.values * lr)


class TF1Momentum(TF1Optimizer):
    """``tf.compat.v1.train.MomentumOptimizer``: ``accum = momentum*accum + g``, ``var -= lr*accum``
    (nesterov: ``var -= lr*g + lr*momentum*accum``); slot ``momentum``."""

    tf1_name = "MomentumOptimizer"

    def __init__(self, learning_rate: Any, momentum: Any, use_nesterov: bool = False, **kwargs: Any) -> None:
        super().__init__(learning_rate, momentum=momentum, **kwargs)
        self.use_nesterov = bool(use_nesterov)

    def build(self, variables: list) -> None:
        if self.built:
            return
        super().build(variables)
        self.accumulators = self.add_optimizer_variables(variables, "momentum")

    def _apply_dense(self, grad: tf.Tensor, var: Any, lr: tf.Tensor, dtype: tf.DType) -> None:
        tf.raw_ops.ResourceApplyMomentum(
            var=var.handle, accum=self.accumulators[self._index(var)].handle, lr=lr, grad=grad,
            momentum=self.hyper("momentum", dtype), use_locking=self.use_locking,
            use_nesterov=self.use_nesterov)

    def _apply_sparse(self, grad: tf.IndexedSlices, var: Any, lr: tf.Tensor, dtype: tf.DType) -> None:
        # TF1's SparseApplyMomentum kernel (CPU only), row by row on the gradient's rows, in ops
        # that every device has: the same float32 expressions
        values, indices = _deduplicate(grad)
        accum, momentum = self.accumulators[self._index(var)].value, self.hyper("momentum", dtype)
        a = tf.gather(accum, indices) * momentum + values
        accum.scatter_update(tf.IndexedSlices(a, indices))
        delta = lr * values + (lr * momentum) * a if self.use_nesterov else lr * a
        var.scatter_sub(tf.IndexedSlices(delta, indices))

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "use_nesterov": self.use_nesterov}


class TF1Adam(TF1Optimizer):
    """``tf.compat.v1.train.AdamOptimizer``: TF1's Adam, epsilon 1e-8 by default (Keras': 1e-7);
    slots ``m`` and ``v``, and TF1's ``beta1_power``/``beta2_power``: ``b1^t``, ``b2^t`` kept as
    running products (multiplied once per ``apply_gradients``, as TF1's ``_finish`` did, so the
    float32 values are TF1's to the bit)."""

    tf1_name = "AdamOptimizer"

    def build(self, variables: list) -> None:
        if self.built:
            return
        super().build(variables)
        self.m, self.v = self.add_optimizer_variables(variables, ["m", "v"])
        with tf.init_scope():  # the initial b1, b2 (built in a traced step too: read them eagerly)
            initial = {key: float(self.hyper(key, tf.float32)) for key in ("beta1", "beta2")}
        self.beta1_power, self.beta2_power = (
            self.add_variable((), initializer=keras.initializers.Constant(initial[key]),
                              name=f"{key}_power", aggregation="only_first_replica")
            for key in ("beta1", "beta2"))

    def apply(self, grads: Any, trainable_variables: Any = None) -> None:
        if len(grads) == 0:  # Keras' apply does nothing then, nor does TF1
            return
        super().apply(grads, trainable_variables)
        for power, key in ((self.beta1_power, "beta1"), (self.beta2_power, "beta2")):
            power.assign(power * self.hyper(key, tf.as_dtype(power.dtype)))

    def _powers(self, dtype: tf.DType) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
        return (self.hyper("beta1", dtype), self.hyper("beta2", dtype),
                tf.cast(self.beta1_power, dtype), tf.cast(self.beta2_power, dtype))

    def _apply_dense(self, grad: tf.Tensor, var: Any, lr: tf.Tensor, dtype: tf.DType) -> None:
        i = self._index(var)
        beta1, beta2, beta1_power, beta2_power = self._powers(dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=var.handle, m=self.m[i].handle, v=self.v[i].handle, beta1_power=beta1_power,
            beta2_power=beta2_power, lr=lr, beta1=beta1, beta2=beta2, epsilon=self.hyper("epsilon", dtype),
            grad=grad, use_locking=self.use_locking, use_nesterov=False)

    def _apply_sparse(self, grad: tf.IndexedSlices, var: Any, lr: tf.Tensor, dtype: tf.DType) -> None:
        # TF1's _apply_sparse_shared: decay every row of m and v, add the gradient's rows, update all
        values, indices = _deduplicate(grad)
        i = self._index(var)
        m, v = self.m[i].value, self.v[i].value
        beta1, beta2, beta1_power, beta2_power = self._powers(dtype)
        alpha = lr * tf.sqrt(1 - beta2_power) / (1 - beta1_power)
        m.assign(m * beta1)
        m.scatter_add(tf.IndexedSlices(values * (1 - beta1), indices))
        v.assign(v * beta2)
        v.scatter_add(tf.IndexedSlices((values * values) * (1 - beta2), indices))
        var.assign_sub(alpha * m / (tf.sqrt(v) + self.hyper("epsilon", dtype)))


class TF1RMSProp(TF1Optimizer):
    """``tf.compat.v1.train.RMSPropOptimizer``: slots ``rms`` (initialized to ONE, as TF1's),
    ``momentum`` and, centered, ``mg``."""

    tf1_name = "RMSPropOptimizer"

    def __init__(self, learning_rate: Any, centered: bool = False, **kwargs: Any) -> None:
        super().__init__(learning_rate, **kwargs)
        self.centered = bool(centered)

    def build(self, variables: list) -> None:
        if self.built:
            return
        super().build(variables)
        self.rms = self.add_optimizer_variables(variables, "rms", initializer="ones")
        self.moments = self.add_optimizer_variables(variables, "momentum")
        self.mg = self.add_optimizer_variables(variables, "mg") if self.centered else []

    def _args(self, var: Any, lr: tf.Tensor, dtype: tf.DType) -> dict[str, Any]:
        i = self._index(var)
        args = dict(var=var.handle, ms=self.rms[i].handle, mom=self.moments[i].handle, lr=lr,
                    rho=self.hyper("decay", dtype), momentum=self.hyper("momentum", dtype),
                    epsilon=self.hyper("epsilon", dtype), use_locking=self.use_locking)
        if self.centered:
            args["mg"] = self.mg[i].handle
        return args

    def _apply_dense(self, grad: tf.Tensor, var: Any, lr: tf.Tensor, dtype: tf.DType) -> None:
        op = tf.raw_ops.ResourceApplyCenteredRMSProp if self.centered else tf.raw_ops.ResourceApplyRMSProp
        op(grad=grad, **self._args(var, lr, dtype))

    def _apply_sparse(self, grad: tf.IndexedSlices, var: Any, lr: tf.Tensor, dtype: tf.DType) -> None:
        values, indices = _deduplicate(grad)
        if _on_cpu(var):  # TF1's own kernels, which exist on the CPU only
            op = (tf.raw_ops.ResourceSparseApplyCenteredRMSProp if self.centered
                  else tf.raw_ops.ResourceSparseApplyRMSProp)
            op(grad=values, indices=indices, **self._args(var, lr, dtype))
            return
        # elsewhere their expressions in ops every device has (the kernels' float32 rounding may
        # differ in the last bit: they fuse multiply-adds); note ms*rho + g*g*(1-rho), not the dense form
        i = self._index(var)
        rho, momentum = self.hyper("decay", dtype), self.hyper("momentum", dtype)
        ms_var, mom_var = self.rms[i].value, self.moments[i].value
        ms = tf.gather(ms_var, indices) * rho + values * values * (1 - rho)
        ms_var.scatter_update(tf.IndexedSlices(ms, indices))
        denominator = ms + self.hyper("epsilon", dtype)
        if self.centered:
            mg_var = self.mg[i].value
            mg = tf.gather(mg_var, indices) * rho + values * (1 - rho)
            mg_var.scatter_update(tf.IndexedSlices(mg, indices))
            denominator = denominator - mg * mg
        mom = tf.gather(mom_var, indices) * momentum + tf.math.rsqrt(denominator) * lr * values
        mom_var.scatter_update(tf.IndexedSlices(mom, indices))
        var.scatter_sub(tf.IndexedSlices(mom, indices))

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "centered": self.centered}


# -- from a TF1 optimizer to its stand-in ---------------------------------------------------------
def _adam(opt: Any) -> TF1Adam:
    return TF1Adam(opt._lr, beta1=opt._beta1, beta2=opt._beta2, epsilon=opt._epsilon,
                   name=opt._name, use_locking=opt._use_locking)


def _momentum(opt: Any) -> TF1Momentum:
    return TF1Momentum(opt._learning_rate, opt._momentum, use_nesterov=opt._use_nesterov,
                       name=opt._name, use_locking=opt._use_locking)


def _gradient_descent(opt: Any) -> TF1GradientDescent:
    return TF1GradientDescent(opt._learning_rate, name=opt._name, use_locking=opt._use_locking)


def _rmsprop(opt: Any) -> TF1RMSProp:
    return TF1RMSProp(opt._learning_rate, decay=opt._decay, momentum=opt._momentum, epsilon=opt._epsilon,
                      centered=opt._centered, name=opt._name, use_locking=opt._use_locking)


def _makers() -> dict[type, Callable[[Any], TF1Optimizer]]:
    train = tf.compat.v1.train
    return {train.AdamOptimizer: _adam, train.MomentumOptimizer: _momentum,
            train.GradientDescentOptimizer: _gradient_descent, train.RMSPropOptimizer: _rmsprop}


#: the TF1 optimizers that have a stand-in
SUPPORTED = ("AdamOptimizer", "MomentumOptimizer", "GradientDescentOptimizer", "RMSPropOptimizer")

#: what to use for the others
_KERAS_NAMES = {"AdagradOptimizer": "keras.optimizers.Adagrad", "AdadeltaOptimizer": "keras.optimizers.Adadelta",
                "FtrlOptimizer": "keras.optimizers.Ftrl"}

#: TF1 optimizer -> its stand-in (weak: the stand-in lives as long as the TF1 optimizer or the trainer)
_stand_ins: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def keras_optimizer_for(opt: Any) -> TF1Optimizer | None:
    """The Keras optimizer that stands for ``opt``, a ``tf.compat.v1.train`` optimizer (made on
    the first call, under the distribution strategy in scope then; the same object on every
    later call); None when ``opt`` is not a TF1 optimizer. A TF1 optimizer without a stand-in
    (not one of :data:`SUPPORTED`, or a subclass of one) is a TypeError naming what to use."""
    if not isinstance(opt, tf.compat.v1.train.Optimizer):
        return None
    stand_in = _stand_ins.get(opt)
    if stand_in is None:
        make = _makers().get(type(opt))
        if make is None:
            name = type(opt).__name__
            keras_name = _KERAS_NAMES.get(name, "the Keras optimizer of the same rule (keras.optimizers.*)")
            raise TypeError(
                f"tf.compat.v1.train optimizer {name} is not supported: trainstack trains with TF1's "
                f"{', '.join(SUPPORTED)} (TF1's rules, checkpointed); use {keras_name} instead")
        stand_in = _stand_ins[opt] = make(opt)
    return stand_in


def adapt_optimizer(opt: Any) -> Any:
    """``opt`` as the core takes it: a TF1 optimizer's Keras stand-in (:func:`keras_optimizer_for`),
    also inside ``apply_grad_processors``; anything else unchanged."""
    from trainstack.towers import ProcessedOptimizer  # noqa: PLC0415

    if isinstance(opt, ProcessedOptimizer):
        inner = keras_optimizer_for(opt.optimizer)
        return opt if inner is None else ProcessedOptimizer(inner, opt.processors)
    stand_in = keras_optimizer_for(opt)
    return opt if stand_in is None else stand_in


def apply_grad_processors(opt: Any, processors: Any) -> Any:
    """tensorpack's ``apply_grad_processors``: the core's, also for a TF1 optimizer (its Keras
    stand-in is wrapped)."""
    from trainstack.towers import apply_grad_processors as core_apply  # noqa: PLC0415

    return core_apply(adapt_optimizer(opt), processors)
