"""The base Trainer: runs ``run_step`` in an epoch × step loop, with callbacks.

"Anything that runs in a loop": the trainer makes no assumption about what a
step is. Either set ``trainer.train_op`` to a callable (the default
``run_step`` runs it through :meth:`Trainer.hooked_run`), or subclass and
override :meth:`Trainer.run_step`.

A run is three calls, which :meth:`Trainer.train` makes in order::

    trainer.setup_callbacks(callbacks, monitors)   # 1. callbacks and monitors
    trainer.initialize(...)                         # 2. the layers above: initialize state
    trainer.main_loop(steps_per_epoch, starting_epoch, max_epoch)   # 3. the loop
"""
from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from ._console import install_console_handler
from .callback import Callback
from .checks import check_bool
from .group import Callbacks
from .interrupt import TrainingInterrupted, exit_with_status_when_uncaught, interruptible, stop_after_this_step
from .monitors import MonitorBase, Monitors
from .run import RunContext, call_step
from .state import TrainLoop
from .stop import ON_NONFINITE, NonFiniteError, StopTraining

__all__ = ["Trainer", "DEFAULT_MAX_EPOCH"]

logger = logging.getLogger("trainstack.loop")

#: tensorpack's default for ``max_epoch``: practically "until stopped".
DEFAULT_MAX_EPOCH = 9999999


class Trainer:
    """Base class of trainers.

    Counters (``epoch_num``, ``global_step``, ``local_step``,
    ``steps_per_epoch``, ``starting_epoch``, ``max_epoch``) are read from
    ``trainer.loop``, a :class:`TrainLoop`, their only home.
    """

    #: Whether this process is the chief of a distributed run; chief-only
    #: callbacks are dropped elsewhere.
    is_chief: bool = True

    #: Exceptions that, like StopTraining, end training cleanly. Framework
    #: layers add theirs (e.g. an input that ran out of data).
    stop_exceptions: tuple[type[BaseException], ...] = ()

    #: Callbacks slower than this many seconds in one epoch are reported.
    slow_callback_threshold: float = 1.0

    #: Steps each ``run_step`` makes (one call of a step function that loops, e.g. a trainer's
    #: traced step): fewer Python round trips per step. Callbacks' per-step hooks run once per
    #: call; a callback with ``needs_every_step`` brings it back to 1 (logged).
    steps_per_run: int = 1

    def __init__(self) -> None:
        self.loop = TrainLoop()
        self._callbacks: list[Callback] | Callbacks = []
        self.monitors: Monitors | None = None
        self._initialized = False

    # -- counters, from the loop state ----------------------------------------
    @property
    def epoch_num(self) -> int:
        return self.loop.epoch_num

    @property
    def global_step(self) -> int:
        return self.loop.global_step

    @property
    def local_step(self) -> int:
        return self.loop.local_step

    @property
    def steps_per_epoch(self) -> int:
        return self.loop.steps_per_epoch

    @property
    def starting_epoch(self) -> int:
        return self.loop.starting_epoch

    @property
    def max_epoch(self) -> int:
        return self.loop.max_epoch

    # -- callbacks ---------------------------------------------------------------
    @property
    def callbacks(self) -> Callbacks:
        """The group of callbacks; exists once :meth:`setup_callbacks` has run."""
        if not isinstance(self._callbacks, Callbacks):
            raise RuntimeError("the trainer's callbacks are not set up yet; call setup_callbacks() "
                               "(or train()) first")
        return self._callbacks

    def register_callback(self, cb: Callback | Sequence[Callback]) -> Any:
        """Add a callback, or a list of them (tensorpack's ``self.register_callback(
        input.setup(...))``); allowed only until :meth:`setup_callbacks` finishes.

        Returns False (and logs) when the callback is chief-only and this
        process is not the chief; for a list, the list of those results.
        """
        if isinstance(cb, (list, tuple)):
            return [self.register_callback(c) for c in cb]
        if not isinstance(cb, Callback):
            raise TypeError(f"register_callback expects a Callback, got {cb!r} ({type(cb).__name__})")
        if isinstance(self._callbacks, Callbacks):
            raise RuntimeError(
                f"cannot register callback {cb.name}: the trainer's callbacks are already set up. "
                "Register callbacks before setup_callbacks()/train(), or pass them to train()")
        if any(c is cb for c in self._callbacks):
            logger.debug("Callback %s is already registered; not registered twice.", cb.name)
            return True
        if cb.chief_only and not self.is_chief:
            logger.warning("Callback %s is chief-only; skipped on this non-chief process.", cb.name)
            return False
        self._callbacks.append(cb)
        return True

    def setup_callbacks(self, callbacks: Sequence[Callback], monitors: Sequence[MonitorBase]) -> None:
        """Register ``callbacks`` then ``monitors`` (after anything registered before), build
        ``trainer.monitors`` and run every callback's ``setup_graph``. Call once."""
        if isinstance(self._callbacks, Callbacks):
            raise RuntimeError("setup_callbacks() was already called on this trainer")
        callbacks, monitors = _as_list("callbacks", callbacks), _as_list("monitors", monitors)
        for cb in callbacks:
            if isinstance(cb, MonitorBase):
                raise TypeError(f"{cb.name} is a monitor; pass it in monitors=, not callbacks=")
            self.register_callback(cb)
        for extra in self.implicit_callbacks():
            self.register_callback(extra)
        registered = []
        for m in monitors:
            if not isinstance(m, MonitorBase):
                raise TypeError(f"monitors must derive from MonitorBase, got {m!r} ({type(m).__name__})")
            if self.register_callback(m):
                registered.append(m)
        # the hub exists before any setup_graph runs, so every callback can write to it
        self.monitors = Monitors(registered)
        group = Callbacks(self._callbacks, slow_threshold=self.slow_callback_threshold)
        self._callbacks = group
        group.setup_graph(self)
        group.report_slow("setup_graph")

    # -- initialization ----------------------------------------------------------------
    def initialize(self, **kwargs: Any) -> None:
        """Prepare state before the loop (restore a checkpoint, ...); call once,
        after :meth:`setup_callbacks`. The keyword arguments go to ``_initialize``."""
        if self._initialized:
            raise RuntimeError("initialize() was already called on this trainer")
        self.callbacks  # noqa: B018 - raises a clear error if not set up
        self._initialize(**kwargs)
        self._initialized = True

    def _initialize(self, **kwargs: Any) -> None:
        """Hook for the layers above; the base trainer takes no arguments."""
        if kwargs:
            raise TypeError(
                f"{type(self).__name__}.initialize() got unexpected arguments {sorted(kwargs)}; "
                "the base loop Trainer has nothing to initialize (framework trainers, e.g. "
                "trainstack.towers', accept session_init and friends)")

    # -- running steps -------------------------------------------------------------------
    def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a step function once, without any callback hook (tensorpack's ``sess.run``)."""
        return call_step(fn, args)[0]

    def hooked_run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a step function once with the callbacks' ``before_run``/``after_run``.

        Each callback may ask for named values (fetches) and give feeds; the
        step runs once with all of them, ``global_step`` grows by one, and
        each callback receives what it asked for. Returns the step's output.
        """
        group = self._callbacks
        if not isinstance(group, Callbacks) or not group.hooks_runs:
            output = call_step(fn, args)[0]
            self.loop.global_step += self.loop.run_size
            return output
        ctx = RunContext(self, fn, args)
        fetches, feeds, plan = group.before_run(ctx)
        output, values = call_step(fn, args, fetches, feeds)
        self.loop.global_step += self.loop.run_size
        group.after_run(ctx, values, plan)
        return output

    @property
    def hooked_sess(self) -> _SessionShim:
        """tensorpack's ``trainer.hooked_sess``: ``hooked_sess.run(fn)`` is :meth:`hooked_run`."""
        return _SessionShim(self, hooked=True)

    @property
    def sess(self) -> _SessionShim:
        """tensorpack's ``trainer.sess``: ``sess.run(fn)`` is :meth:`run` (no hooks)."""
        return _SessionShim(self, hooked=False)

    def run_step(self) -> None:
        """One iteration. The default runs ``self.train_op`` through :meth:`hooked_run`;
        set ``train_op`` or override this method to define what an iteration is."""
        train_op = getattr(self, "train_op", None)
        if train_op is None:
            raise NotImplementedError(
                f"{type(self).__name__} has no train_op: set trainer.train_op to a callable "
                "(the step function), or subclass Trainer and override run_step()")
        self.hooked_run(train_op)

    def request_stop(self, reason: str = "a callback requested a stop") -> None:
        """Stop training cleanly before the next step (or after this epoch's hooks),
        as raising StopTraining would, but letting the current hook's other callbacks run."""
        self.loop.stop_reason = reason

    def stop_on_nonfinite(self, what: str, then: str = "") -> NonFiniteError:
        """Stop training because a value is NaN or infinite: what a callback that finds one calls
        (the savers, ``TerminateOnNaN``). Like :meth:`request_stop`; once every ``after_train``
        has run, :meth:`main_loop` raises the :class:`NonFiniteError` returned here (unless
        ``on_nonfinite="stop"``). Its message is ``what`` (what was found, where), then where the
        first non-finite value of the run appeared (:meth:`first_nonfinite`, when known), then
        ``then`` (what happens next, e.g. the last good checkpoint); log it. The first such stop
        of a run is the one raised."""
        first = self.first_nonfinite()
        where = (f" The first non-finite value appeared at global step {first[0]}, in {first[1]}."
                 if first is not None else "")
        error = NonFiniteError(f"{what}{where}{' ' + then if then else ''}",
                               step=first[0] if first is not None else None,
                               tensor=first[1] if first is not None else None,
                               stopped_at=self.loop.global_step)
        if self.loop.nonfinite is None:
            self.loop.nonfinite = error
        if not self.loop.stop_requested:
            self.request_stop(str(error))
        return error

    def first_nonfinite(self) -> tuple[int, str] | None:
        """``(global step, what)`` of the first loss or gradient of this run that was NaN or
        infinite (``what``: e.g. ``"the loss 'cost'"``), or None when there was none or the
        trainer keeps no record. The base loop keeps none; the towers' trainers record it in
        their step (see ``trainstack.towers.trainers.nonfinite``)."""
        return None

    def on_interrupt(self, signal_name: str) -> None:
        """The first SIGTERM / Ctrl-C during :meth:`main_loop` (in the main thread, between
        steps' Python code): stop after the current step. Trainers of several processes
        override it so that every process stops after the same step."""
        stop_after_this_step(self.loop, signal_name)

    def lost_on_exit(self) -> str:
        """What ending the process now would lose, in words: the steps finished since the newest
        checkpoint a callback keeps (:meth:`Callback.last_checkpoint`), and the step in progress.
        What a second signal and :class:`~trainstack.loop.StepWatchdog` report."""
        done = self.loop.global_step
        group = self._callbacks
        latest = group.last_checkpoint() if isinstance(group, Callbacks) else None
        if latest is None:
            return (f"all {done} finished step(s) of this run (global step {done}; no callback keeps "
                    "checkpoints) and the step in progress")
        step, path = latest
        if step >= done:
            return f"only the step in progress (the last checkpoint, {path}, holds global step {step})"
        return (f"the {done - step} step(s) finished since the last checkpoint ({path}, global step "
                f"{step}; global step {done} had finished) and the step in progress")

    def step_waits_in(self) -> str | None:
        """What a step of this trainer may wait in besides its own computation, for reports of a
        step that does not end (:class:`~trainstack.loop.StepWatchdog`): a collective with other
        processes, so that a dead peer is named as the likely cause. None in the base loop;
        trainers of several processes say which collective (e.g. "the allreduce in the step's
        gradient aggregation")."""
        return None

    # -- the loop ----------------------------------------------------------------------
    def main_loop(self, steps_per_epoch: int, starting_epoch: int | None = None,
                  max_epoch: int = DEFAULT_MAX_EPOCH, *, handle_signals: bool = True,
                  on_nonfinite: str = "raise") -> None:
        """Run epochs ``starting_epoch .. max_epoch`` (inclusive) of ``steps_per_epoch`` steps.

        ``starting_epoch`` defaults to 1, or, after ``trainer.loop.load_state_dict``,
        to the resumed run's, which then continues right after its last step.
        StopTraining (and ``stop_exceptions``) end the loop cleanly; any other
        error propagates after every callback's ``after_train`` has run. SIGTERM or
        Ctrl-C stop it after the current step; once every ``after_train`` has run, it raises
        :class:`TrainingInterrupted` (an ``Exception``; uncaught, the program exits with the
        signal's status, 143 or 130, without a traceback). A second one ends the
        process at once, naming what is lost (:meth:`lost_on_exit`; see interrupt.py).

        For that, the loop installs its own SIGTERM and SIGINT handlers while it runs in the
        main thread, and puts the previous ones back after. ``handle_signals=False`` leaves
        the process's handlers alone (a notebook, a hyper-parameter sweep, a host program with
        handlers of its own); what is lost then: a SIGTERM does whatever the process's handler
        does (by default it ends the process at once: no checkpoint of the current step, no
        ``after_train``), and Ctrl-C raises ``KeyboardInterrupt`` in the middle of the step
        (``after_train`` still runs, as for any error, but savers do not save).

        ``on_nonfinite``: a run that a callback stopped because of NaN or infinite values
        (:meth:`stop_on_nonfinite`: the savers refusing to save NaN weights, ``TerminateOnNaN``)
        ends, after every ``after_train``, with :class:`NonFiniteError` (``"raise"``, the
        default: the program exits with an error status) or returns normally (``"stop"``).
        """
        if on_nonfinite not in ON_NONFINITE:
            raise ValueError(f"{type(self).__name__}.main_loop(on_nonfinite=...) must be one of "
                             f"{list(ON_NONFINITE)}, got {on_nonfinite!r}")
        handle_signals = check_bool(f"{type(self).__name__}.main_loop", "handle_signals", handle_signals)
        group = self.callbacks
        loop = self.loop
        loop.configure(steps_per_epoch, starting_epoch, max_epoch)
        loop.stop_reason = loop.interrupted = loop.nonfinite = None
        steps_per_run = self._run_size_limit()
        with (interruptible(loop, self.on_interrupt, self.lost_on_exit) if handle_signals
              else contextlib.nullcontext()):
            self._run_loop(group, steps_per_run)
        if loop.interrupted is not None:
            stop = TrainingInterrupted(loop.interrupted, loop.global_step)
            # a warning, not an error: a preemption's SIGTERM ends a run this way, by design
            logger.warning("Training was interrupted by %s after global step %d; its callbacks saved and "
                           "flushed what they keep. Raising TrainingInterrupted (uncaught, the program "
                           "exits with status %d).", loop.interrupted, loop.global_step, stop.exit_code)
            exit_with_status_when_uncaught()
            raise stop
        if loop.nonfinite is not None:
            if on_nonfinite == "raise":
                logger.error("Training stopped after global step %d because of non-finite values; its "
                             "callbacks kept what they saved and flushed their stats. Raising "
                             "NonFiniteError (on_nonfinite='stop' ends such a run without an error).",
                             loop.global_step)
                raise loop.nonfinite
            logger.warning("Training stopped after global step %d because of non-finite values; "
                           "on_nonfinite='stop': returning normally.", loop.global_step)

    def _run_loop(self, group: Callbacks, steps_per_run: int) -> None:
        """The epochs and steps of :meth:`main_loop`, then every callback's ``after_train``."""
        loop = self.loop
        error: BaseException | None = None
        stops: tuple[type[BaseException], ...] = (StopTraining, *self.stop_exceptions)
        try:
            group.before_train()
            self._run_epochs(group, steps_per_run)
            logger.info("Training has finished!")
        except stops as e:
            logger.info("Training was stopped by %s: %s", type(e).__name__, e)
        except KeyboardInterrupt as e:
            logger.info("Detected Ctrl-C; finalizing callbacks and exiting the main loop.")
            error = e
            raise
        except BaseException as e:
            logger.error("Training failed at global_step=%d (epoch %d, local step %d)%s.",
                         loop.global_step, loop.epoch_num, loop.local_step,
                         "".join(f"; {note}" for note in getattr(e, "__notes__", ())))
            error = e
            raise
        finally:
            failures = group.after_train()
            if failures and error is None:
                raise failures[0]

    def _run_epochs(self, group: Callbacks, steps_per_run: int, *,
                    after_step: Callable[[], None] | None = None,
                    after_epoch: Callable[[], None] | None = None) -> None:
        """The epochs and steps of :meth:`_run_loop`, from the loop's position to ``max_epoch``:
        everything between the callbacks' ``before_train`` and ``after_train``. A hook for
        trainers that drive this part themselves (trainstack.distributed's
        ElasticHorovodTrainer runs it under Horovod's elastic driver): such an override calls
        this one, with ``after_step`` (run after each step's callbacks, when training goes on)
        and ``after_epoch`` (after each epoch's) for what it adds, such as committing state."""
        loop = self.loop
        for epoch in loop.epochs():
            logger.info("Start epoch %d ...", epoch)
            group.before_epoch()
            start = time.perf_counter()
            if loop.stop_requested:
                raise StopTraining(loop.stop_reason)
            for _ in loop.steps(steps_per_run):
                self.run_step()
                group.trigger_step()
                # checked here, not before the next step: the loop state then names the last
                # step that ran, and a run resumed from a checkpoint saved now misses none
                if loop.stop_requested:
                    raise StopTraining(loop.stop_reason)
                if after_step is not None:
                    after_step()
            group.after_epoch()
            logger.info("Epoch %d (global_step %d) finished, time: %.3f s.",
                        epoch, loop.global_step, time.perf_counter() - start)
            group.trigger_epoch()
            group.report_slow(f"epoch {epoch}")
            if after_epoch is not None:
                after_epoch()
            if loop.stop_requested:
                raise StopTraining(loop.stop_reason)

    def _run_size_limit(self) -> int:
        """``steps_per_run``, or 1 when a callback needs every step (logged)."""
        k = self.steps_per_run
        if k > 1:
            needy = [cb.name for cb in self.callbacks.cbs if cb.needs_every_step]
            if needy:
                logger.info("steps_per_run=%d lowered to 1: %s need(s) every step.", k, ", ".join(needy))
                return 1
        return k

    def train(self, callbacks: Sequence[Callback], monitors: Sequence[MonitorBase],
              steps_per_epoch: int, starting_epoch: int | None = None,
              max_epoch: int = DEFAULT_MAX_EPOCH, *, handle_signals: bool = True,
              on_nonfinite: str = "raise", **initialize_kwargs: Any) -> None:
        """``setup_callbacks``, ``initialize`` and ``main_loop``, in that order.
        ``handle_signals=False``: leave the process's SIGTERM/SIGINT handlers alone (see
        :meth:`main_loop` for what is lost). ``on_nonfinite="stop"``: a run stopped because of
        NaN or infinite values returns instead of raising :class:`NonFiniteError`."""
        _ensure_log_handler()
        self.setup_callbacks(callbacks, monitors)
        self.initialize(**initialize_kwargs)
        self.main_loop(steps_per_epoch, starting_epoch, max_epoch, handle_signals=handle_signals,
                       on_nonfinite=on_nonfinite)

    def train_with_defaults(self, *, callbacks: Sequence[Callback] | None = None,
                            monitors: Sequence[MonitorBase] | None = None,
                            extra_callbacks: Sequence[Callback] | None = None,
                            steps_per_epoch: int | None = None, starting_epoch: int | None = None,
                            max_epoch: int = DEFAULT_MAX_EPOCH, handle_signals: bool = True,
                            on_nonfinite: str = "raise", **initialize_kwargs: Any) -> None:
        """Like :meth:`train`, with defaults for everything but ``steps_per_epoch``.

        ``extra_callbacks`` (default :meth:`default_extra_callbacks`) are added after
        ``callbacks``; ``monitors`` default to :meth:`default_monitors`.
        """
        if steps_per_epoch is None:
            steps_per_epoch = self._default_steps_per_epoch()
        extra = self.default_extra_callbacks() if extra_callbacks is None else extra_callbacks
        monitors = self.default_monitors() if monitors is None else monitors
        self.train([*_as_list("callbacks", callbacks or []), *_as_list("extra_callbacks", extra)],
                   monitors, steps_per_epoch, starting_epoch, max_epoch, handle_signals=handle_signals,
                   on_nonfinite=on_nonfinite, **initialize_kwargs)

    def default_extra_callbacks(self) -> list[Callback]:
        """Callbacks added by :meth:`train_with_defaults`; none in the base loop."""
        return []

    def default_monitors(self) -> list[MonitorBase]:
        """Monitors used by :meth:`train_with_defaults`; none in the base loop."""
        return []

    def implicit_callbacks(self) -> list[Callback]:
        """Callbacks :meth:`setup_callbacks` adds after the user's, always: for state a subclass
        keeps in step with the loop (the tensorpack layer's trainers: the variable tensorpack's
        ``get_global_step_var()`` reads). None in the base loop."""
        return []

    def _default_steps_per_epoch(self) -> int:
        raise ValueError(f"{type(self).__name__}.train_with_defaults() needs steps_per_epoch: "
                         "the base loop cannot know the size of an epoch")


class _SessionShim:
    """``trainer.hooked_sess`` / ``trainer.sess`` of a tensorpack script: ``run(fetches)`` runs
    the step function(s) ``fetches`` with :meth:`Trainer.hooked_run` / :meth:`Trainer.run`."""

    def __init__(self, trainer: Trainer, hooked: bool) -> None:
        self._trainer = trainer
        self._hooked = hooked

    def run(self, fetches: Any, feed_dict: Any = None, *args: Any) -> Any:
        method = "hooked_run" if self._hooked else "run"
        if feed_dict is not None:
            raise TypeError(
                f"trainer.{'hooked_sess' if self._hooked else 'sess'}.run(..., feed_dict=...): "
                "TensorFlow 2 has no placeholders to feed. Give the step function its inputs as "
                f"arguments, trainer.{method}(fn, *args), or read them from the trainer's InputSource")
        run = getattr(self._trainer, method)
        if isinstance(fetches, (list, tuple)):
            return [run(f, *args) for f in fetches]
        if not callable(fetches):
            raise TypeError(f"trainer.{method}() runs a step function (a callable such as "
                            f"trainer.train_op), got {fetches!r}: TF1 tensors and ops cannot be run")
        return run(fetches, *args)


def _as_list(what: str, items: Any) -> list[Any]:
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"{what} must be a list of callbacks, got {items!r} ({type(items).__name__})")
    return list(items)


def _ensure_log_handler() -> None:
    """Show the trainer's INFO logs on the console (the "trainstack" logger's console handler,
    which defers to the application's own console handler; see ``_console.py``)."""
    install_console_handler()
