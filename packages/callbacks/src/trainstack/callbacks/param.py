"""Hyperparameters: what can be changed during training, and the callbacks that change it.

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

Setters (:class:`HyperParamSetter`) set their param at ``before_train`` and when
triggered. Each puts the param's value to ``trainer.monitors`` as a scalar named after
the param: once at ``before_train``, then whenever the value changes.
"""
from __future__ import annotations

import abc
import logging
import math
import numbers
import os
from collections import deque
from typing import Any, Callable, Iterable

import numpy as np
import tensorflow as tf

from trainstack.loop import Callback, Trainer

from .logdir import get_logger_dir

__all__ = ["HyperParam", "TFVariableParam", "GraphVarParam", "OptimizerParam", "ObjAttrParam",
           "NamedParam", "HyperParamSetter", "ScheduledHyperParamSetter",
           "HyperParamSetterWithFunc", "StatMonitorParamSetter", "HumanHyperParamSetter"]

logger = logging.getLogger("trainstack.callbacks")


# -- targets ------------------------------------------------------------------------------------
class HyperParam(abc.ABC):
    """Something a :class:`HyperParamSetter` can read and set."""

    _readable_name: str

    def setup(self, trainer: Trainer) -> None:
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


def _is_variable(x: Any) -> bool:
    """A tf.Variable or a Keras variable: something with a dtype, a shape and assign()."""
    return isinstance(x, tf.Variable) or all(hasattr(x, a) for a in ("assign", "dtype", "shape", "numpy"))


def _variable_names(var: Any) -> set[str]:
    name = str(getattr(var, "name", ""))
    names = {name, name.split(":")[0]}
    path = getattr(var, "path", None)  # Keras 3 variables: "model/dense/kernel"
    if isinstance(path, str):
        names.add(path)
    return names - {""}


def _all_variables(trainer: Trainer) -> list:
    objects = getattr(trainer, "checkpoint_objects", None)
    if not isinstance(objects, dict):
        raise LookupError(f"{type(trainer).__name__} has no checkpoint_objects dict to find "
                          "variables in")
    found: dict[int, Any] = {}
    for obj in objects.values():
        for var in [obj] if _is_variable(obj) else list(getattr(obj, "variables", ())):
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
        elif _is_variable(variable):
            self._var_name = None
            super().__init__(variable, readable_name or str(variable.name).split(":")[0])
        else:
            raise TypeError(f"TFVariableParam expects a tf.Variable (or Keras variable) or a variable "
                            f"name, got {variable!r} ({type(variable).__name__})")

    def _find(self, trainer: Trainer) -> Any:
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
        optimizer = getattr(trainer, "optimizer", None)
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
    if _is_variable(value):
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
        optimizer = getattr(trainer, "optimizer", None)
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


# -- setters ------------------------------------------------------------------------------------
_UNSET = object()


def _fmt(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, numbers.Real) else repr(value)


class HyperParamSetter(Callback):
    """Base of the callbacks that set a hyperparameter.

    At ``before_train`` (unless ``_enable_before_train`` is False) and at each trigger it
    asks :meth:`_get_value_to_set` for a value (None: leave it) and sets it. ``param`` is a
    :class:`HyperParam` or a name (:class:`NamedParam`). Runs on every process
    (``chief_only`` False): each worker's copy of the param must change.
    """

    _chief_only = False
    _enable_before_train = True

    def __init__(self, param: HyperParam | str) -> None:
        if isinstance(param, str):
            param = NamedParam(param)
        if not isinstance(param, HyperParam):
            raise TypeError(f"param must be a HyperParam or a name, got {param!r} "
                            f"({type(param).__name__})")
        self.param = param
        self._last_value: Any = _UNSET  # the value last put to the monitors
        self._last_logged_epoch: int | None = None

    def _default_name(self) -> str:
        return f"{type(self).__name__}({self.param.readable_name})"

    def _setup_graph(self) -> None:
        self.param.setup(self.trainer)

    def _get_value_to_set(self) -> Any:
        """The value to set now, or None to leave the param as it is."""
        raise NotImplementedError(f"{type(self).__name__} must implement _get_value_to_set()")

    def _get_value_at_start(self) -> Any:
        """The value to set at ``before_train``; by default, the one a trigger would set."""
        return self._get_value_to_set()

    def get_value_to_set(self) -> Any:
        """The value a trigger now would set (None: none)."""
        return self._get_value_to_set()

    def get_current_value(self) -> Any:
        """The param's current value."""
        return self.param.get_value()

    def _before_train(self) -> None:
        if self._enable_before_train:
            self._set_param(self._get_value_at_start())
        if self._last_value is _UNSET:  # nothing was set: record the starting value
            self._record(self.param.get_value())

    def _trigger(self) -> None:
        self._set_param(self.get_value_to_set())

    def _set_param(self, v: Any) -> None:
        if v is None:
            return
        self.param.set_value(v)
        value = self.param.get_value()
        if value == self._last_value:
            return
        if self._last_logged_epoch != self.epoch_num:  # at most one message per epoch
            self._last_logged_epoch = self.epoch_num
            if self._last_value is _UNSET:
                logger.info("[%s] At global_step=%d, %s is set to %s", self.name, self.global_step,
                            self.param.readable_name, _fmt(value))
            else:
                logger.info("[%s] At global_step=%d, %s changes from %s to %s", self.name,
                            self.global_step, self.param.readable_name, _fmt(self._last_value),
                            _fmt(value))
        self._record(value)

    def _record(self, value: Any) -> None:
        self._last_value = value
        if isinstance(value, numbers.Real):  # an ObjAttrParam may hold anything
            self.trainer.monitors.put_scalar(self.param.readable_name, value)


def _check_schedule(schedule: Any) -> list[tuple[int, float]]:
    try:
        pairs = list(schedule)
    except TypeError:
        raise TypeError(f"schedule must be a list of (epoch or step, value) pairs, "
                        f"got {schedule!r}") from None
    if not pairs:
        raise ValueError("schedule is empty; expected [(epoch or step, value), ...]")
    checked = []
    for item in pairs:
        try:
            point, value = item
        except (TypeError, ValueError):
            raise TypeError(f"schedule entry {item!r} is not an (epoch or step, value) pair") from None
        if (isinstance(point, bool) or not isinstance(point, numbers.Real) or point != int(point)
                or point < 0):
            raise ValueError(f"schedule entry {item!r}: the epoch/step must be an integer >= 0")
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"schedule entry {item!r}: the value must be a number")
        checked.append((int(point), float(value)))
    checked.sort(key=lambda p: p[0])
    points = [p for p, _ in checked]
    if len(set(points)) != len(points):
        raise ValueError(f"schedule {pairs!r} has the same epoch/step more than once")
    return checked


class ScheduledHyperParamSetter(HyperParamSetter):
    """Set a param by a schedule ``[(epoch, value), ...]`` (``[(step, value), ...]`` if ``step_based``).

    tensorpack's semantics: ``(p, v)`` sets the param to ``v`` once epoch ``p`` has
    finished (``trigger_epoch``), or once global step ``p`` has been reached (``trigger_step``
    after the step that makes ``global_step == p``); so the step with index ``p`` (0-based)
    is the first to run with ``v``. ``(0, v)`` sets ``v`` before training. With
    ``interp='linear'``, between two points the value is interpolated at each trigger (no
    extrapolation). With ``set_at_beginning`` (resumed runs), ``before_train`` sets the
    value the schedule gives at the current epoch/step even when that is not a schedule point.
    """

    def __init__(self, param: HyperParam | str, schedule: Iterable[tuple[int, float]],
                 interp: str | None = None, step_based: bool = False,
                 set_at_beginning: bool = True) -> None:
        self.schedule = _check_schedule(schedule)
        if interp not in (None, "linear"):
            raise ValueError(f"interp must be None or 'linear', got {interp!r}")
        self.interp = interp
        self.step_based = bool(step_based)
        self._set_at_beginning = bool(set_at_beginning)
        super().__init__(param)

    def overrides(self, hook: str) -> bool:
        # only one of the two triggers does anything: keep the other off the loop's hot path
        if hook == ("trigger_epoch" if self.step_based else "trigger_step"):
            return False
        return super().overrides(hook)

    def _current_point(self) -> int:
        return self.global_step if self.step_based else self.epoch_num

    def _value_at(self, point: int) -> float | None:
        """The value to set when at ``point``: a schedule point, or inside an interpolated span."""
        last = None
        for p, v in self.schedule:
            if p == point:
                return v
            if p > point:
                if last is None or self.interp is None:
                    return None
                lp, lv = last
                return lv + (v - lv) * (point - lp) / (p - lp)
            last = (p, v)
        return None  # past the last point

    def _value_in_effect(self, point: int) -> float | None:
        """What the param should be at ``point`` if the schedule had run from the start."""
        exact = self._value_at(point)
        if exact is not None:
            return exact
        reached = [v for p, v in self.schedule if p <= point]
        return reached[-1] if reached else None

    def _get_value_to_set(self) -> float | None:
        return self._value_at(self._current_point())

    def _get_value_at_start(self) -> float | None:
        point = self._current_point()
        exact = self._value_at(point)
        if exact is not None:
            return exact
        expected = self._value_in_effect(point)
        current = self.param.get_value()
        if expected is None or math.isclose(expected, current, rel_tol=1e-6):
            return None
        where = f"{'step' if self.step_based else 'epoch'} {point}"
        if self._set_at_beginning:
            logger.info("[%s] the schedule gives %s=%.7g at %s, but it is %.7g; setting it.",
                        self.name, self.param.readable_name, expected, where, current)
            return expected
        logger.warning("[%s] the schedule gives %s=%.7g at %s, but it is %.7g; left as is "
                       "(set_at_beginning=False).", self.name, self.param.readable_name, expected,
                       where, current)
        return None

    def _trigger_epoch(self) -> None:
        if not self.step_based:
            self.trigger()

    def _trigger_step(self) -> None:
        if self.step_based:
            self.trigger()


class HyperParamSetterWithFunc(HyperParamSetter):
    """Set a param to ``func(epoch_num, old_value)``; ``epoch_num`` is the epoch that just finished
    (``starting_epoch - 1`` at ``before_train``). Return None to leave it."""

    def __init__(self, param: HyperParam | str, func: Callable[[int, Any], Any]) -> None:
        if not callable(func):
            raise TypeError(f"func must be callable as func(epoch_num, old_value), got {func!r}")
        super().__init__(param)
        self.f = func

    def _get_value_to_set(self) -> Any:
        return self.f(self.epoch_num, self.get_current_value())


class StatMonitorParamSetter(HyperParamSetter):
    """Change a param when a statistic stops improving.

    At each trigger it reads the latest value of ``stat_name`` from the monitors. Once it
    has ``last_k`` new values, if ``min(values) >= values[0] - threshold`` (with
    ``reverse``: ``max(values) <= values[0] + threshold``), it sets ``value_func(old_value)``
    and starts collecting again. Example: decay the learning rate by 5 when ``val-error``
    has not decreased for 5 epochs: ``StatMonitorParamSetter('learning_rate', 'val-error',
    lambda x: x * 0.2, threshold=0, last_k=5)``.
    """

    _enable_before_train = False

    def __init__(self, param: HyperParam | str, stat_name: str, value_func: Callable[[Any], Any],
                 threshold: float, last_k: int, reverse: bool = False) -> None:
        if not isinstance(stat_name, str) or not stat_name:
            raise TypeError(f"stat_name must be the name of a scalar statistic, got {stat_name!r}")
        if not callable(value_func):
            raise TypeError(f"value_func must be callable as value_func(old_value), got {value_func!r}")
        if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
            raise TypeError(f"threshold must be a number, got {threshold!r}")
        if isinstance(last_k, bool) or not isinstance(last_k, int) or last_k < 1:
            raise ValueError(f"last_k must be a positive integer, got {last_k!r}")
        super().__init__(param)
        self.stat_name = stat_name
        self.value_func = value_func
        self.threshold = float(threshold)
        self.reverse = bool(reverse)
        self.history: deque = deque(maxlen=last_k)
        self._values_seen = 0  # length of the stat's history at the last trigger

    def _get_value_to_set(self) -> Any:
        history = self.trainer.monitors.get_history(self.stat_name)
        if not history:
            logger.warning("[%s] no value of %r in the monitors yet; known: %s", self.name,
                           self.stat_name, self.trainer.monitors.scalar_names())
            return None
        if len(history) == self._values_seen:
            logger.warning("[%s] triggered, but no new value of %r since the last time.",
                           self.name, self.stat_name)
            return None
        self._values_seen = len(history)
        self.history.append(history[-1])
        if len(self.history) < self.history.maxlen:
            return None
        values = list(self.history)
        if self.reverse:
            improved = max(values) > values[0] + self.threshold
        else:
            improved = min(values) < values[0] - self.threshold
        if improved:
            return None
        self.history.clear()
        logger.info("[%s] %s did not improve over %d values: %s", self.name, self.stat_name,
                    len(values), ", ".join(f"{v:.4g}" for v in values))
        return self.value_func(self.get_current_value())


class HumanHyperParamSetter(HyperParamSetter):
    """Set a param from a text file edited by hand while training runs.

    ``file_name`` (relative to the logger directory, or absolute) holds ``name:value`` lines,
    e.g. ``learning_rate:1e-4``; blank lines and ``#`` comments are ignored. It is read at
    ``before_train`` and at each trigger; a missing file, a missing name or a bad line is a
    warning and leaves the param as it is.
    """

    def __init__(self, param: HyperParam | str, file_name: str | os.PathLike = "hyper.txt") -> None:
        if not isinstance(file_name, (str, os.PathLike)) or not os.fspath(file_name):
            raise TypeError(f"file_name must be a path, got {file_name!r}")
        super().__init__(param)
        self._file_name = os.fspath(file_name)
        self.file_name: str | None = None
        self._last_warning: str | None = None

    def _setup_graph(self) -> None:
        super()._setup_graph()
        if os.path.isabs(self._file_name):
            self.file_name = self._file_name
        else:
            log_dir = get_logger_dir()
            if log_dir is None:
                raise ValueError(f"{self.name}: {self._file_name!r} is relative to the logger "
                                 "directory, but none is set; call set_logger_dir() first or pass "
                                 "an absolute file_name")
            self.file_name = os.path.join(log_dir, self._file_name)
        logger.info("[%s] reads %s from %s.", self.name, self.param.readable_name, self.file_name)

    def _warn(self, message: str) -> None:
        if message != self._last_warning:  # the same trouble is reported once, not every epoch
            logger.warning("[%s] %s", self.name, message)
            self._last_warning = message

    def _get_value_to_set(self) -> float | None:
        try:
            with open(self.file_name, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            self._warn(f"{self.file_name} does not exist; {self.param.readable_name} is unchanged")
            return None
        values = {}
        for number, line in enumerate(lines, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            key, sep, value = line.partition(":")
            try:
                if not sep:
                    raise ValueError
                values[key.strip()] = float(value)
            except ValueError:
                self._warn(f"{self.file_name}:{number}: {line!r} is not 'name:number'; ignored")
        if self.param.readable_name not in values:
            self._warn(f"{self.file_name} has no line '{self.param.readable_name}:<value>'; "
                       "unchanged")
            return None
        self._last_warning = None
        return values[self.param.readable_name]
