"""Hyperparameter setters: the callbacks that change a :class:`HyperParam` during training.

:class:`HyperParamSetter` sets its param at ``before_train`` and when triggered, from a
schedule (:class:`ScheduledHyperParamSetter`), a function (:class:`HyperParamSetterWithFunc`),
a statistic that stopped improving (:class:`StatMonitorParamSetter`) or a file edited by
hand (:class:`HumanHyperParamSetter`). Each puts the param's value to ``trainer.monitors``
as a scalar named after the param: once at ``before_train``, then whenever the value changes.
A string ``param`` is a :class:`NamedParam` (see :mod:`~trainstack.callbacks.hyperparam`).
"""
from __future__ import annotations

import logging
import math
import numbers
import os
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from trainstack.loop import Callback
from trainstack.loop.checks import check_bool, check_int, check_number

from .callback_state import NumbersState
from .hyperparam import HyperParam, NamedParam
from .logdir import get_logger_dir

__all__ = ["HyperParamSetter", "ScheduledHyperParamSetter", "HyperParamSetterWithFunc",
           "StatMonitorParamSetter", "HumanHyperParamSetter"]

logger = logging.getLogger("trainstack.callbacks")


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
            assert self.trainer.monitors is not None
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
        point = check_int("ScheduledHyperParamSetter", "schedule", point, minimum=0,
                          note=f"the epoch/step of the entry {item!r}")
        value = check_number("ScheduledHyperParamSetter", "schedule", value,
                             note=f"the value of the entry {item!r}")
        checked.append((point, float(value)))
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
        self.step_based = check_bool(type(self).__name__, "step_based", step_based)
        self._set_at_beginning = check_bool(type(self).__name__, "set_at_beginning", set_at_beginning)
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
        # tensorpack's warning: a run (often a resumed one) whose parameter was initialized to
        # something else than its schedule says is the mistake this line exists to catch
        where = f"{'step' if self.step_based else 'epoch'} {point}"
        action = ("setting it to the schedule's value" if self._set_at_beginning else
                  "left as is (set_at_beginning=False): if no other setter changes it, check how it "
                  "is initialized")
        logger.warning("[%s] the schedule gives %s=%.7g at %s, but it is %.7g; %s.", self.name,
                       self.param.readable_name, expected, where, current, action)
        return expected if self._set_at_beginning else None

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

    The values collected are checkpointed by :class:`ModelSaver` (see
    :mod:`~trainstack.callbacks.callback_state`): a resumed run changes the param when the
    uninterrupted run would.
    """

    _enable_before_train = False

    def __init__(self, param: HyperParam | str, stat_name: str, value_func: Callable[[Any], Any],
                 threshold: float, last_k: int, reverse: bool = False) -> None:
        if not isinstance(stat_name, str) or not stat_name:
            raise TypeError(f"stat_name must be the name of a scalar statistic, got {stat_name!r}")
        if not callable(value_func):
            raise TypeError(f"value_func must be callable as value_func(old_value), got {value_func!r}")
        check_number("StatMonitorParamSetter", "threshold", threshold)
        last_k = check_int("StatMonitorParamSetter", "last_k", last_k, minimum=1)
        super().__init__(param)
        self.stat_name = stat_name
        self.value_func = value_func
        self.threshold = float(threshold)
        self.reverse = check_bool(type(self).__name__, "reverse", reverse)
        self.history: deque = deque(maxlen=last_k)
        self._values_seen = 0  # length of the stat's history at the last trigger
        self._state: NumbersState | None = None

    def checkpoint_state(self) -> NumbersState:
        """The values collected so far, and whether the monitors' latest value of the
        statistic is among them, in variables (see callback_state)."""
        if self._state is None:
            assert self.history.maxlen is not None  # last_k
            self._state = NumbersState("StatMonitorParamSetter", history=self.history.maxlen, seen_latest=1)
        self._state.put("history", self.history)
        assert self.trainer.monitors is not None
        seen = self._values_seen == len(self.trainer.monitors.get_history(self.stat_name))
        self._state.put("seen_latest", [float(seen)])
        return self._state

    def load_checkpoint_state(self) -> None:
        """Continue with the values collected before the checkpoint (the monitors' latest
        scalars are restored first: a value put after this setter's last trigger is new)."""
        self.history.clear()
        assert self._state is not None
        self.history.extend(self._state.get("history"))
        assert self.trainer.monitors is not None
        known = len(self.trainer.monitors.get_history(self.stat_name))
        self._values_seen = known if self._state.get("seen_latest") == [1.0] else max(known - 1, 0)

    def _get_value_to_set(self) -> Any:
        assert self.trainer.monitors is not None
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
        assert self.history.maxlen is not None  # last_k
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
        assert self.file_name is not None  # set by _setup_graph
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
