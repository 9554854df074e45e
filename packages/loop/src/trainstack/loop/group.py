"""The group of a trainer's callbacks: calls each hook on them in order.

The order is the registration order, which the trainer makes:

1. input callbacks (registered by the InputSource while the graph is set up),
2. trainer callbacks (registered by the trainer itself),
3. user callbacks (``callbacks=``),
4. extra callbacks (``extra_callbacks=``, the defaults),
5. monitors, last.

A hook is only called on the callbacks that override it. The time each
callback spends in its hooks is measured, and callbacks that take longer
than ``slow_threshold`` seconds in an epoch are reported in the log.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from time import perf_counter
from typing import TYPE_CHECKING, Any

from .callback import HOOKS, Callback
from .run import RunArgs, RunContext, RunValues
from .stop import StopTraining

if TYPE_CHECKING:  # pragma: no cover
    from .trainer import Trainer

__all__ = ["Callbacks"]

logger = logging.getLogger("trainstack.loop")


class Callbacks:
    """Holds the callbacks of one trainer and runs each hook over them."""

    def __init__(self, callbacks: Sequence[Callback], slow_threshold: float = 1.0) -> None:
        for i, cb in enumerate(callbacks):
            if not isinstance(cb, Callback):
                raise TypeError(f"callback #{i} is {cb!r} ({type(cb).__name__}), not a Callback")
        self.cbs = list(callbacks)
        self.slow_threshold = slow_threshold
        self._ask_overrides()
        #: seconds spent by each callback in its hooks since the last report
        self.timings: dict[Callback, float] = defaultdict(float)

    def _ask_overrides(self) -> None:
        """Ask each callback which hooks it takes part in (:meth:`Callback.overrides`)."""
        # hook name -> callbacks that override it, in order
        self._active = {h: [cb for cb in self.cbs if cb.overrides(h)] for h in HOOKS}
        #: whether any callback takes part in hooked runs (if not, they skip the protocol)
        self.hooks_runs = bool(self._active["before_run"] or self._active["after_run"])

    def active(self, hook: str) -> list[Callback]:
        """The callbacks that run on ``hook``."""
        return self._active[hook]

    def last_checkpoint(self) -> tuple[int, str] | None:
        """The newest of the callbacks' :meth:`Callback.last_checkpoint` (by global step), or None."""
        found = [c for c in (cb.last_checkpoint() for cb in self.cbs) if c is not None]
        return max(found, key=lambda c: c[0]) if found else None

    def _call(self, hook: str, *args: Any) -> None:
        active = self._active[hook]
        if not active:
            return
        timings = self.timings
        for cb in active:
            start = perf_counter()
            try:
                getattr(cb, hook)(*args)
            except Exception as e:
                _note_callback(e, cb, hook)
                raise
            timings[cb] += perf_counter() - start

    # -- hooks -------------------------------------------------------------
    def setup_graph(self, trainer: Trainer) -> None:
        # every callback knows its trainer before any setup_graph runs, so that
        # data put into the monitors by an earlier callback's setup finds them ready
        for cb in self.cbs:
            cb.trainer = trainer
        for cb in self.cbs:
            start = perf_counter()
            cb.setup_graph(trainer)
            self.timings[cb] += perf_counter() - start
        # asked again: a callback's answer may depend on its trainer and on what its setup found
        # (MergeAllSummaries takes part in hooked runs only when its trainer's steps fetch summaries)
        self._ask_overrides()

    def before_train(self) -> None:
        self._call("before_train")
        self.report_slow("before_train")

    def before_epoch(self) -> None:
        self._call("before_epoch")

    def trigger_step(self) -> None:
        self._call("trigger_step")

    def after_epoch(self) -> None:
        self._call("after_epoch")

    def trigger_epoch(self) -> None:
        self._call("trigger_epoch")

    def report_slow(self, when: str) -> None:
        """Log callbacks slower than ``slow_threshold`` since the last report; reset."""
        slow = sorted(((t, cb) for cb, t in self.timings.items() if t >= self.slow_threshold),
                      key=lambda x: -x[0])
        if slow:
            total = sum(self.timings.values())
            logger.info("Callbacks took %.3f s in %s; slowest: %s", total, when,
                        "; ".join(f"{cb.name}: {t:.3f} s" for t, cb in slow))
        self.timings.clear()

    def after_train(self) -> list[BaseException]:
        """Run every ``after_train``, even when some fail; return the failures."""
        errors = []
        for cb in self._active["after_train"]:
            try:
                cb.after_train()
            except StopTraining:
                continue
            except BaseException as e:  # noqa: BLE001 - every callback must be finalized
                logger.exception("Callback %s failed in after_train", cb.name)
                errors.append(e)
        return errors

    # -- the hooked run ----------------------------------------------------
    def before_run(self, ctx: RunContext) -> tuple[list[str], dict[str, Any], list[Any]]:
        """Collect the callbacks' requests: (fetch names, feeds, plan for after_run)."""
        names: dict[str, None] = {}  # ordered set
        feeds: dict[str, Any] = {}
        feeders: dict[str, Callback] = {}
        plan = []
        timings = self.timings
        for cb in self._active["before_run"]:
            start = perf_counter()
            try:
                req = cb.before_run(ctx)
            except Exception as e:
                _note_callback(e, cb, "before_run")
                raise
            timings[cb] += perf_counter() - start
            if req is None:
                continue
            if not isinstance(req, RunArgs):
                raise TypeError(f"{cb.name}.before_run returned {req!r}; expected RunArgs or None")
            for n in req.fetch_names():
                names[n] = None
            for k, v in req.feeds.items():
                if k in feeders:
                    raise ValueError(f"callbacks {feeders[k].name} and {cb.name} both feed {k!r}; "
                                     "a value can be fed by one callback only")
                feeders[k] = cb
                feeds[k] = v
            plan.append((cb, req))
        return list(names), feeds, plan

    def after_run(self, ctx: RunContext, values: Mapping[str, Any], plan: list[Any]) -> None:
        """Hand each callback the values it asked for in ``before_run``."""
        requests = {id(cb): req for cb, req in plan}
        timings = self.timings
        for cb in self._active["after_run"]:
            req = requests.get(id(cb))
            run_values = RunValues(req.pack(values) if req is not None else None)
            start = perf_counter()
            try:
                cb.after_run(ctx, run_values)
            except Exception as e:
                _note_callback(e, cb, "after_run")
                raise
            timings[cb] += perf_counter() - start


def _note_callback(error: Exception, cb: Callback, hook: str) -> None:
    """Name the callback and hook that raised ``error`` in its traceback (a note, once);
    StopTraining is how callbacks end training, not a failure."""
    if isinstance(error, StopTraining):
        return
    if not any(note.startswith(_NOTE) for note in getattr(error, "__notes__", ())):
        error.add_note(f"{_NOTE} {cb.name} in {hook}")


_NOTE = "raised by callback"
