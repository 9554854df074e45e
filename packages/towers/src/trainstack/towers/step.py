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
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Mapping, Sequence

import tensorflow as tf

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
    """

    def __init__(self, body: StepBody, feed_signature: Mapping[str, tf.TensorSpec], *,
                 name: str = "train_step", jit_compile: bool = False) -> None:
        if not callable(body):
            raise TypeError(f"TracedStep body must be callable, got {body!r}")
        self.name = name
        self._body = body
        self.feed_signature = dict(feed_signature)
        self.jit_compile = bool(jit_compile)
        self._variants: dict[tuple[str, ...], Any] = {}
        #: traces made of each variant (more than one only while it is first traced)
        self.trace_counts: dict[tuple[str, ...], int] = {}
        self._opening: set[tuple[str, ...]] = set()
        self._lock = threading.RLock()

    # -- variants -------------------------------------------------------------------------------
    @property
    def variants(self) -> list[tuple[str, ...]]:
        """The fetch-name sets traced so far (``()`` is the plain step)."""
        return list(self._variants)

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

            def traced(feeds: Mapping[str, tf.Tensor]) -> tuple[Any, Mapping[str, Any]]:
                self._on_trace(key)
                return self._body(feeds, key)

            traced.__name__ = f"{self.name}_{len(self._variants)}"
            fn = tf.function(traced, input_signature=[self.feed_signature], jit_compile=self.jit_compile,
                             autograph=True)
            self._opening.add(key)
            try:
                fn.get_concrete_function()
            finally:
                self._opening.discard(key)
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
        ``(output, {name: value})`` for the names in ``fetches``."""
        if args:
            raise TypeError(f"{self.name} takes no positional arguments (its inputs come from the "
                            f"InputSource and the feeds), got {len(args)}")
        self._check_feeds(feeds)
        key = _key(fetches)
        output, values = self._variant(key)(dict(feeds))
        return output, values

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


def _key(fetches: Sequence[str]) -> tuple[str, ...]:
    if isinstance(fetches, str):
        fetches = [fetches]
    return tuple(sorted(set(fetches)))
