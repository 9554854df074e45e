"""TracedStep: a traced step function that callbacks fetch named tensors from.

The loop's hooked run asks the step for named values (callbacks'
``before_run`` fetches) and gives it feeds. A :class:`TracedStep` keeps one
``tf.function`` per distinct set of fetch names ("variant"): the variant
computes the step *and* returns the requested tensors, looked up by name in
the step's own graph, so the values come from the same call as the training
step, and tensors reach the host only when a callback asked for them.

The graph is frozen: each variant is traced once, when first used (the
no-fetch variant at setup). Any later trace of a variant raises
:class:`RetraceError` instead of silently rebuilding the model on every call
(e.g. after ``tf.config.run_functions_eagerly(True)``, which would run the
Python step code each time).

Summaries: every variant records where the step's first trace recorded, so a
variant traced later (when a callback first fetches, during training) updates
the same moving averages. That collection is the one chosen (by
``summary_collection_scope``, or by the trainer whose ``__init__`` makes the
step: see ``TowerTrainer``) when the step is made, else when it is first
traced; a scope the body enters itself still wins inside it.
:attr:`TracedStep.default_summaries` names what its traces recorded into the
process-wide default collection, which a trainer with its own collection
refuses to run.

With ``while_running`` (the trainer sets it during training when its input
prepares the next step's feeds ahead, as FeedInput does), each call is
launched on an asynchronous eager executor of the step's own, the host runs
``while_running`` while it computes, and then waits for it: a call still
returns finished, raising its own errors, as a synchronous one does.
"""
from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tensorflow as tf

from trainstack.callbacks import (
    SummaryCollection,
    default_summary_collection,
    get_summary_collection,
    summary_collection_chosen,
    summary_collection_scope,
    tf_private,
    to_numpy,
)
from trainstack.inputs.host_tensor import as_host_tensor

__all__ = ["TracedStep", "RetraceError"]

logger = logging.getLogger("trainstack.towers")

#: body(feeds, fetch_names) -> (output, {name: tensor}); called while tracing.
StepBody = Callable[[Mapping[str, tf.Tensor], tuple[str, ...]], tuple[Any, Mapping[str, Any]]]


class RetraceError(RuntimeError):
    """A traced step was traced again after its first trace: the graph is frozen."""

    # Exception's own __init__ lets autograph re-raise it with its type when it crosses a trace
    __init__ = Exception.__init__


class TracedStep:
    """A step function with fetch-by-name variants; implements the loop's ``FetchableStep``.

    ``body(feeds, fetch_names)`` builds the step in the graph being traced and
    returns ``(output, {name: tensor for name in fetch_names})``.
    ``feed_signature`` ({name: TensorSpec}) is what the step takes; feeds come
    from the hooked run (e.g. a FeedInput's batches). ``jit_compile`` is
    passed to ``tf.function``.

    With ``multi_step``, the body takes a third argument, the number of steps
    to make in this call (an int32 scalar tensor: one trace serves every
    count), and the step is run with that count as its one positional
    argument (``trainer.hooked_run(step, n)``; default 1).

    ``while_running`` (settable): host work to do while each call computes, e.g. reading and
    converting the next call's feeds; see the module docstring. :meth:`close` ends the
    executor that overlapping needs.
    """

    def __init__(self, body: StepBody, feed_signature: Mapping[str, tf.TensorSpec], *,
                 name: str = "train_step", jit_compile: bool = False, multi_step: bool = False,
                 while_running: Callable[[], None] | None = None) -> None:
        if not callable(body):
            raise TypeError(f"TracedStep body must be callable, got {body!r}")
        self.name = name
        self.multi_step = bool(multi_step)
        self._body = body
        self.feed_signature = dict(feed_signature)
        #: the feeds in the order the traced function takes them flat (tf.nest sorts dict keys)
        self._flat_feeds = sorted(self.feed_signature.items())
        self.jit_compile = bool(jit_compile)
        self._variants: dict[tuple[str, ...], Any] = {}
        #: each variant's one trace: called directly, it skips tf.function's per-call argument
        #: matching (about half of a small model's step time)
        self._concrete: dict[tuple[str, ...], Any] = {}
        #: traces made of each variant (more than one only while it is first traced)
        self.trace_counts: dict[tuple[str, ...], int] = {}
        self._opening: set[tuple[str, ...]] = set()
        self._lock = threading.RLock()
        self.while_running = while_running
        #: the asynchronous executor calls are launched on while ``while_running`` is set (made
        #: on first use; its thread ends with :meth:`close`)
        self._executor: Any = None
        #: where the traces record summaries (see the module docstring); fixed now if a scope chose
        self._summaries: SummaryCollection | None | object = (
            get_summary_collection() if summary_collection_chosen() else _UNCHOSEN)
        self._default_summaries: tuple[str, ...] = ()

    # -- variants -------------------------------------------------------------------------------
    @property
    def variants(self) -> list[tuple[str, ...]]:
        """The fetch-name sets traced so far (``()`` is the plain step)."""
        return list(self._variants)

    @property
    def default_summaries(self) -> tuple[str, ...]:
        """The names its traces recorded into the process-wide default collection (nothing chose
        a collection when the step was made nor when it was first traced)."""
        return self._default_summaries

    def _summary_scope(self) -> Any:
        """The scope a trace records summaries in: its own (one for every variant), unless a
        scope is chosen around the trace; the first trace fixes it if nothing did before."""
        if self._summaries is _UNCHOSEN:
            self._summaries = get_summary_collection()
        if summary_collection_chosen():
            return contextlib.nullcontext()
        return summary_collection_scope(self._summaries)  # type: ignore[arg-type]  # chosen above

    def trace(self, fetches: Sequence[str] = ()) -> None:
        """Trace the variant fetching ``fetches`` now (without running it)."""
        self._variant(_key(fetches))

    def _variant(self, key: tuple[str, ...]) -> Any:
        fn = self._variants.get(key)
        if fn is not None:
            return fn
        with self._lock:
            fn = self._variants.get(key)
            if fn is not None:
                return fn

            def traced(feeds: Mapping[str, tf.Tensor], *steps: tf.Tensor) -> tuple[Any, Mapping[str, Any]]:
                self._on_trace(key)
                with self._summary_scope():
                    return self._body(feeds, key, *steps)

            traced.__name__ = f"{self.name}_{len(self._variants)}"
            signature = [self.feed_signature] + ([tf.TensorSpec([], tf.int32)] if self.multi_step else [])
            fn = tf.function(traced, input_signature=signature, jit_compile=self.jit_compile,
                             autograph=False)
            self._opening.add(key)
            try:
                self._concrete[key] = fn.get_concrete_function()
            finally:
                self._opening.discard(key)
            recorded = default_summary_collection().names_recorded_in(self._concrete[key].graph)
            self._default_summaries = tuple(dict.fromkeys([*self._default_summaries, *recorded]))
            self._variants[key] = fn
            if key:
                logger.info("%s: traced a variant fetching %s.", self.name, list(key))
            return fn

    def _on_trace(self, key: tuple[str, ...]) -> None:
        self.trace_counts[key] = self.trace_counts.get(key, 0) + 1
        if key not in self._opening:
            what = f"fetching {list(key)}" if key else "without fetches"
            raise RetraceError(
                f"{self.name} (the variant {what}) is being traced again (trace "
                f"#{self.trace_counts[key]}) after it was set up. The graph is frozen after "
                "setup_graph: a retrace would rebuild the model, slowly and maybe differently. "
                "Common causes: tf.config.run_functions_eagerly(True) (which runs the Python step "
                "code on every call), or calling the step's tf.function with arguments of another "
                "signature")

    # -- running ----------------------------------------------------------------------------------
    def run_with_fetches(self, args: tuple, fetches: Sequence[str],
                         feeds: Mapping[str, Any]) -> tuple[Any, Mapping[str, Any]]:
        """The loop's hooked-run protocol: run once with ``feeds``; return
        ``(output, {name: value})`` for the names in ``fetches``; the values are NumPy (as
        tensorpack's ``run_values.results``), copied to the host only when something was fetched."""
        if len(args) > int(self.multi_step):
            raise TypeError(f"{self.name} takes {'the number of steps as its one' if self.multi_step else 'no'} "
                            f"positional argument (its inputs come from the InputSource and the feeds), "
                            f"got {len(args)}")
        self._check_feeds(feeds)
        key = _key(fetches)
        steps = (tf.constant(args[0] if args else 1, tf.int32),) if self.multi_step else ()
        fn = self._variant(key)
        if tf.config.functions_run_eagerly():  # the tf.function retraces: RetraceError
            output, values = fn(dict(feeds), *steps)
        elif self.while_running is None:
            output, values = self._call_concrete(self._concrete[key], feeds, steps)
        else:
            output, values = self._call_overlapped(self._concrete[key], feeds, steps)
        if values:
            values = tf.nest.map_structure(to_numpy, values)
        return output, values

    def _call_overlapped(self, concrete: Any, feeds: Mapping[str, Any], steps: tuple) -> Any:
        """:meth:`_call_concrete` launched on the step's asynchronous executor; ``while_running``
        runs while the call computes, then the call is waited for. Its errors are raised here
        (and cleared from the executor, so that a later call starts clean), after
        ``while_running``, which keeps its own errors for the next call (FeedInput does).
        Without an asynchronous executor (a counted fallback, see ``tf_private``), the call
        computes first and ``while_running`` runs after it."""
        if self._executor is None:
            self._executor = tf_private.new_async_executor()
        executor = self._executor
        if executor is None:
            result = self._call_concrete(concrete, feeds, steps)
            self.while_running()  # type: ignore[misc]  # set: the caller checked
            return result
        # the thread's own executor is back as soon as the call is queued
        try:
            with tf_private.executor_scope(executor):
                result = self._call_concrete(concrete, feeds, steps)
        except BaseException:
            executor.clear_error()  # refused before it was queued: no error of it stays behind
            raise
        try:
            self.while_running()  # type: ignore[misc]  # set: the caller checked
        finally:
            _wait(executor)
        return result

    def close(self) -> None:
        """Wait for the calls in flight and end the asynchronous executor (and its thread); a later
        overlapped call makes another. Errors of the calls were raised by them."""
        executor, self._executor = self._executor, None
        if executor is not None:
            try:
                _wait(executor)
            except tf.errors.OpError:
                pass
            del executor  # its deleter ends the executor's thread

    def _call_concrete(self, concrete: Any, feeds: Mapping[str, Any], steps: tuple) -> Any:
        """Call a variant's trace with ``feeds`` (and the step count). Its arguments are known
        exactly, so they go in flat, as tensors, past the per-call matching of structured
        arguments, which costs a small model a third of its step; without the private flat call
        (a counted fallback, see ``tf_private``) the public call."""
        call_flat = tf_private.flat_caller(concrete)
        if call_flat is None:
            return concrete(dict(feeds), *steps)
        flat = [as_host_tensor(feeds[name], spec.dtype) for name, spec in self._flat_feeds]
        return call_flat([*flat, *steps])  # packs its outputs itself

    def __call__(self, **feeds: Any) -> Any:
        """Run the plain step (no fetches) with ``feeds``; return its output."""
        return self.run_with_fetches((), (), feeds)[0]

    def _check_feeds(self, feeds: Mapping[str, Any]) -> None:
        expected = self.feed_signature
        if feeds.keys() == expected.keys():
            return
        missing = sorted(set(expected) - set(feeds))
        extra = sorted(set(feeds) - set(expected))
        msg = f"{self.name} takes the feeds {sorted(expected)}"
        if missing:
            msg += (f"; {missing} are missing (a FeedInput gives them in hooked runs only: run the "
                    "step with trainer.hooked_run, and register the input's callbacks)")
        if extra:
            msg += f"; {extra} are not inputs of the step (fed by a callback's before_run)"
        raise KeyError(msg)

    def __repr__(self) -> str:
        return f"TracedStep({self.name!r}, variants={self.variants})"


#: no collection chosen for a step's summaries yet
_UNCHOSEN = object()


def _wait(executor: Any) -> None:
    """Wait for ``executor``'s calls; on an error, clear it from the executor, then raise it."""
    try:
        executor.wait()
    except BaseException:
        executor.clear_error()
        raise


def _key(fetches: Sequence[str]) -> tuple[str, ...]:
    if isinstance(fetches, str):
        fetches = [fetches]
    return tuple(sorted(set(fetches)))
