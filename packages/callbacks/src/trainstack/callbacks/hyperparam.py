"""Hyperparameters: what the setters of :mod:`~trainstack.callbacks.param` change during training.

Targets (:class:`HyperParam`): :class:`TFVariableParam` (alias ``GraphVarParam``) for a
scalar ``tf.Variable``/Keras variable, :class:`OptimizerParam` for a variable attribute of
an optimizer (its ``learning_rate``), :class:`ObjAttrParam` for any Python attribute, and
:class:`NamedParam` for a name, which is what a string ``param`` becomes.

A name resolves at ``setup_graph``, in this order:

1. ``trainer.optimizer.<name>`` when the trainer has an optimizer with that attribute: it
   must be a variable (Keras 3 keeps a float ``learning_rate`` in one); a learning rate
   computed by a schedule, or a plain Python number captured as a constant by the traced
   step, is an error, since setting it would not change training;
2. otherwise the one scalar variable among ``trainer.checkpoint_objects`` whose name
   (with or without ``:0``) or Keras path is ``name``.

Setting a variable is an ``assign``, so a traced step sees the new value without retracing.
"""
from __future__ import annotations

import abc
from typing import Any

import numpy as np
import tensorflow as tf

from trainstack.loop import Trainer

from .trainer_protocol import declares
from .variables import is_variable

__all__ = ["HyperParam", "TFVariableParam", "GraphVarParam", "OptimizerParam", "ObjAttrParam",
           "NamedParam"]


# -- targets ------------------------------------------------------------------------------------
class HyperParam(abc.ABC):
    """Something a :class:`HyperParamSetter` can read and set."""

    _readable_name: str

    def setup(self, trainer: Trainer) -> None:  # noqa: B027 (optional: most params need no setup)
        """Find what to set, once the trainer exists (called at the setter's ``setup_graph``)."""

    @abc.abstractmethod
    def set_value(self, v: Any) -> None:
        """Set the param to ``v``."""

    @abc.abstractmethod
    def get_value(self) -> Any:
        """The param's current value."""

    @property
    def readable_name(self) -> str:
        """The name shown in logs, used in monitors and in HumanHyperParamSetter's file."""
        return self._readable_name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.readable_name!r})"


def _variable_names(var: Any) -> set[str]:
    name = str(getattr(var, "name", ""))
    names = {name, name.split(":")[0]}
    path = getattr(var, "path", None)  # Keras 3 variables: "model/dense/kernel"
    if isinstance(path, str):
        names.add(path)
    return names - {""}


def _all_variables(trainer: Trainer) -> list:
    objects = trainer.checkpoint_objects if declares(trainer, "checkpoint_objects") else None
    if not isinstance(objects, dict):
        raise LookupError(f"{type(trainer).__name__} has no checkpoint_objects dict to find "
                          "variables in")
    found: dict[int, Any] = {}
    for obj in objects.values():
        for var in [obj] if is_variable(obj) else list(getattr(obj, "variables", ())):
            found.setdefault(id(var), var)
    return list(found.values())


def find_variable(trainer: Trainer, name: str) -> Any:
    """The one variable among ``trainer.checkpoint_objects`` named ``name`` (see the module doc)."""
    variables = _all_variables(trainer)
    matches = [v for v in variables if name in _variable_names(v)]
    if len(matches) > 1:
        raise ValueError(f"{len(matches)} variables match the name {name!r}: "
                         f"{[getattr(v, 'path', v.name) for v in matches]}; pass the variable itself "
                         "(TFVariableParam(var))")
    if not matches:
        known = sorted({getattr(v, "path", None) or str(v.name).split(":")[0] for v in variables})
        raise LookupError(f"no variable named {name!r} among trainer.checkpoint_objects; "
                          f"known: {known[:30]}{' ...' if len(known) > 30 else ''}")
    return matches[0]


class _VariableParam(HyperParam):
    """A scalar variable, found at setup by :meth:`_find` unless given; set by ``assign``."""

    def __init__(self, var: Any, readable_name: str) -> None:
        self.var = None if var is None else _checked_scalar(var, type(self).__name__)
        self._readable_name = readable_name

    def setup(self, trainer: Trainer) -> None:
        if self.var is None:
            self.var = _checked_scalar(self._find(trainer), repr(self))

    def _find(self, trainer: Trainer) -> Any:
        raise NotImplementedError

    def _variable(self) -> Any:
        if self.var is None:
            raise RuntimeError(f"{self!r} is not set up yet: its variable is found at setup(trainer)")
        return self.var

    def set_value(self, v: Any) -> None:
        var = self._variable()
        dtype = tf.as_dtype(var.dtype)
        if dtype.is_integer:
            if not float(v).is_integer():
                raise ValueError(f"{self!r} is a {dtype.name} variable; cannot set it to {v!r}")
            v = int(v)
        var.assign(v)

    def get_value(self) -> float | int | bool:
        return np.asarray(self._variable().numpy()).item()


def _checked_scalar(var: Any, who: str) -> Any:
    if tuple(var.shape) != ():
        raise ValueError(f"{who}: a hyperparameter must be a scalar variable; {var.name} has shape "
                         f"{tuple(var.shape)}")
    return var


class TFVariableParam(_VariableParam):
    """A scalar variable (``tf.Variable`` or Keras variable), given itself or by name.

    A name is looked up among ``trainer.checkpoint_objects``' variables at setup.
    """

    def __init__(self, variable: Any, readable_name: str | None = None) -> None:
        if isinstance(variable, str):
            if not variable:
                raise ValueError("a variable name must not be empty")
            self._var_name: str | None = variable
            super().__init__(None, readable_name or variable.split(":")[0])
        elif is_variable(variable):
            self._var_name = None
            super().__init__(variable, readable_name or str(variable.name).split(":")[0])
        else:
            raise TypeError(f"TFVariableParam expects a tf.Variable (or Keras variable) or a variable "
                            f"name, got {variable!r} ({type(variable).__name__})")

    def _find(self, trainer: Trainer) -> Any:
        assert self._var_name is not None  # called for a variable given by name
        return find_variable(trainer, self._var_name)


#: tensorpack's name for a variable hyperparameter.
GraphVarParam = TFVariableParam


class OptimizerParam(_VariableParam):
    """A variable attribute of an optimizer, ``learning_rate`` by default.

    ``optimizer`` defaults to ``trainer.optimizer``, found at setup. The attribute must be
    a variable: a Keras 3 optimizer created with a float learning rate keeps it in one; one
    created with a ``LearningRateSchedule`` (or a callable) computes it, and is refused.
    """

    def __init__(self, attrname: str = "learning_rate", optimizer: Any = None,
                 readable_name: str | None = None) -> None:
        if not isinstance(attrname, str) or not attrname:
            raise TypeError(f"attrname must be an attribute name, got {attrname!r}")
        self.attrname = attrname
        self.optimizer = optimizer
        var = None if optimizer is None else _optimizer_variable(optimizer, attrname)
        super().__init__(var, readable_name or attrname)

    def _find(self, trainer: Trainer) -> Any:
        optimizer = trainer.optimizer if declares(trainer, "optimizer") else None
        if optimizer is None:
            raise AttributeError(f"{self!r} needs an optimizer: pass optimizer=, or give the "
                                 f"trainer ({type(trainer).__name__}) an `optimizer` attribute")
        self.optimizer = optimizer
        return _optimizer_variable(optimizer, self.attrname)


def _optimizer_variable(optimizer: Any, attrname: str) -> Any:
    opt_name = type(optimizer).__name__
    if not hasattr(optimizer, attrname):
        raise AttributeError(f"optimizer {opt_name} has no attribute {attrname!r}")
    value = getattr(optimizer, attrname)
    if is_variable(value):
        return value
    if tf.is_tensor(value):
        raise TypeError(
            f"{opt_name}.{attrname} is computed at each step (the optimizer was given a "
            "LearningRateSchedule or a callable), not a variable, so it cannot be set; create the "
            f"optimizer with a float {attrname} to control it with a HyperParamSetter")
    raise TypeError(
        f"{opt_name}.{attrname} is {value!r} ({type(value).__name__}), not a variable: the traced "
        "step captured it as a constant, so setting it would not change training. Use "
        "ObjAttrParam(optimizer, attrname) only if the step reads the attribute at each call")


class ObjAttrParam(HyperParam):
    """A Python attribute of any object; ``readable_name`` defaults to ``attrname``."""

    def __init__(self, obj: Any, attrname: str, readable_name: str | None = None) -> None:
        if not isinstance(attrname, str) or not hasattr(obj, attrname):
            raise AttributeError(f"ObjAttrParam: {type(obj).__name__} object has no attribute "
                                 f"{attrname!r}")
        self.obj = obj
        self.attrname = attrname
        self._readable_name = readable_name or attrname

    def set_value(self, v: Any) -> None:
        setattr(self.obj, self.attrname, v)

    def get_value(self) -> Any:
        return getattr(self.obj, self.attrname)


class NamedParam(HyperParam):
    """A param given by name, resolved at setup as the module docstring says."""

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"a param name must be a non-empty string, got {name!r}")
        self._readable_name = name
        self.target: HyperParam | None = None

    def setup(self, trainer: Trainer) -> None:
        name = self._readable_name
        optimizer = trainer.optimizer if declares(trainer, "optimizer") else None
        if optimizer is not None and hasattr(optimizer, name):
            self.target = OptimizerParam(name, optimizer=optimizer)
            return
        try:
            self.target = TFVariableParam(find_variable(trainer, name), readable_name=name)
        except LookupError as e:
            where = (f"{type(optimizer).__name__} (trainer.optimizer) has no attribute {name!r}, and "
                     if optimizer is not None else "the trainer has no `optimizer`, and ")
            raise LookupError(f"cannot find the hyperparameter {name!r}: {where}{e}") from None
        self.target.setup(trainer)

    def _target(self) -> HyperParam:
        if self.target is None:
            raise RuntimeError(f"{self!r} is not set up yet: its target is found at setup(trainer)")
        return self.target

    def set_value(self, v: Any) -> None:
        self._target().set_value(v)

    def get_value(self) -> Any:
        return self._target().get_value()
