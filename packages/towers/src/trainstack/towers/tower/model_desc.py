"""ModelDesc: a model described by its inputs, its tower function and its optimizer.

::

    class Model(ModelDesc):
        def __init__(self):
            self.fc = keras.layers.Dense(10)          # Keras layers owned by the model hold
                                                      # the variables, created once
        def inputs(self):
            return [tf.TensorSpec([None, 784], tf.float32, "image"),
                    tf.TensorSpec([None], tf.int32, "label")]

        def build_graph(self, image, label):          # the tower function: returns the cost
            training = get_current_tower_context().is_training
            logits = self.fc(image, training=training)
            cost = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(
                label, logits, from_logits=True), name="cost")
            tf.identity(accuracy(logits, label), name="accuracy")   # fetchable by name
            add_moving_summary(cost)
            return cost

        def optimizer(self):
            return keras.optimizers.Adam(1e-3)

``build_graph`` is called once per tower and on every trace (see
:mod:`trainstack.towers.tower.tower`): keep it free of side effects beyond building
the graph, and pass ``training=`` to layers that behave differently
(dropout, batch normalization).
"""
from __future__ import annotations

import abc
from typing import Any

import tensorflow as tf

from trainstack.inputs import InputSignatureError, normalize_signature

from .tower import TowerFunc

__all__ = ["ModelDescBase", "ModelDesc", "tower_func_of"]


class ModelDescBase(abc.ABC):
    """A model: ``inputs()`` (its input signature) and ``build_graph(*inputs)``.

    :attr:`tower_func_class` is the :class:`TowerFunc` class that builds the model's towers
    in every trainer, predictor, InferenceRunner and export (through
    :meth:`make_tower_func` and :func:`tower_func_of`): plain TensorFlow 2 here;
    ``trainstack.tensorpack``'s ModelDesc names its own, which gives TF1 calls tensorpack's
    meaning while the towers are traced.
    """

    #: the TowerFunc class that builds this model's towers (see the class docstring)
    tower_func_class: type[TowerFunc] = TowerFunc
    #: True: AutoGraph converts ``build_graph`` before each trace, so that Python control flow
    #: on tensors becomes graph control flow (``TowerFunc(autograph=...)``). Off, as in Keras
    #: and tensorpack: such a ``build_graph`` fails at once with an error naming this switch.
    autograph: bool = False

    def make_tower_func(self) -> TowerFunc:
        """The tower function of this model: ``build_graph`` with its input signature, as a
        :attr:`tower_func_class`."""
        return self.tower_func_class(self.build_graph, self.get_input_signature(), autograph=self.autograph)

    @abc.abstractmethod
    def inputs(self) -> list[tf.TensorSpec]:
        """The input signature: a list of ``tf.TensorSpec`` with distinct names."""

    @abc.abstractmethod
    def build_graph(self, *inputs: tf.Tensor) -> Any:
        """Build the model on ``inputs`` (tensors, in the order of :meth:`inputs`)."""

    def get_input_signature(self) -> tuple[tf.TensorSpec, ...]:
        """:meth:`inputs`, checked (every spec a named ``tf.TensorSpec``), computed once."""
        cached = self.__dict__.get("_input_signature_cache")
        if cached is None:
            specs = self.inputs()
            if isinstance(specs, tf.TensorSpec) or not isinstance(specs, (list, tuple)):
                raise InputSignatureError(f"{type(self).__name__}.inputs() must return a list of "
                                          f"tf.TensorSpec, got {specs!r}")
            unnamed = [i for i, s in enumerate(specs) if isinstance(s, tf.TensorSpec) and not s.name]
            if unnamed:
                raise InputSignatureError(
                    f"{type(self).__name__}.inputs(): the specs at positions {unnamed} have no name; "
                    "give each one, e.g. tf.TensorSpec([None, 28, 28], tf.float32, 'image'): "
                    "callbacks and predictors refer to inputs by name")
            cached = normalize_signature(specs)
            self.__dict__["_input_signature_cache"] = cached
        return cached

    def checkpoint_objects(self) -> dict[str, Any]:
        """What the model's checkpoint holds (under the trainers' ``model`` key): a dict
        ``key -> Keras layer, tf.Module or variable`` (or a list/dict of them); a value's
        checkpoint key is ``model/<key>/...``.

        By default the model's attributes holding those, by attribute name (``self.fc``:
        ``model/fc/_kernel``), so renaming such an attribute changes the checkpoint (a resumed
        run then stops with an error naming the variables). Override it to declare keys that
        do not follow the attributes' names, e.g. to keep an older checkpoint's::

            def checkpoint_objects(self):
                return {"fc": self.classifier}

        The default is a declaration, not a guess, and does not warn: it is TensorFlow's own rule
        for objects (``tf.Module`` and Keras models key their checkpoints by attribute name), the
        attributes are the model's public parts, and this method is where to say otherwise. The
        guesses that warn are elsewhere: a plain tower function's closure and globals, a method of
        an object without this method, a trainer's undeclared optimizers.

        Read once, when the model's variables exist (after the first tower is built).
        Variables the model creates that no declared object reaches are kept under
        ``model/untracked/<variable name>``.
        """
        from .owner import model_parts  # noqa: PLC0415

        return model_parts(self)

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self.get_input_signature()]

    @property
    def training(self) -> bool:
        """Whether the tower being built is a training tower (tensorpack's ``self.training``):
        ``get_current_tower_context().is_training``. Only inside ``build_graph``."""
        from .context import get_current_tower_context  # noqa: PLC0415

        ctx = get_current_tower_context()
        if ctx is None:
            raise RuntimeError(f"{type(self).__name__}.training is the current tower's is_training; it "
                               "exists only while a tower is built (inside build_graph)")
        return ctx.is_training


class ModelDesc(ModelDescBase):
    """A single-cost model: ``build_graph`` returns the cost, ``optimizer()`` the optimizer."""

    @staticmethod
    def from_keras(model: Any, loss: Any = None, optimizer: Any = None, metrics: Any = None,
                   inputs: Any = None, label: tf.TensorSpec | None = None) -> ModelDesc:
        """A ModelDesc training a ``keras.Model`` as it is: its inputs and a label, its loss (plus
        its own regularization losses), the optimizer, the metrics as moving summaries; loss and
        optimizer default to those of ``model.compile``. See
        :class:`~trainstack.towers.KerasModelDesc`."""
        from .keras_model import KerasModelDesc  # noqa: PLC0415 - keras_model imports this module

        return KerasModelDesc(model, loss, optimizer, metrics, inputs, label)

    def optimizer(self) -> Any:
        """A Keras optimizer (possibly wrapped by :func:`apply_grad_processors`) to minimize the cost."""
        raise TypeError(f"{type(self).__name__} defines no optimizer(): override ModelDesc.optimizer() "
                        "to return a Keras optimizer before training it (inference needs none)")

    def get_optimizer(self) -> Any:
        """:meth:`optimizer`, called once: the same optimizer on every call."""
        cached = self.__dict__.get("_optimizer_cache")
        if cached is None:
            cached = self.optimizer()
            from .gradproc import check_optimizer
            check_optimizer(cached, f"{type(self).__name__}.optimizer()")
            self.__dict__["_optimizer_cache"] = cached
        return cached


def tower_func_of(fn: Any, input_signature: Any, default: type[TowerFunc] = TowerFunc) -> TowerFunc:
    """``fn`` as a TowerFunc: itself if it is one; the ``tower_func_class`` of the model it is
    the ``build_graph`` of (``model.build_graph``); else a ``default`` (the trainer's
    ``tower_func_class``)."""
    if isinstance(fn, TowerFunc):
        return fn
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, ModelDescBase):
        return owner.tower_func_class(fn, input_signature, autograph=owner.autograph)
    return default(fn, input_signature)
