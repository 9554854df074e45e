"""ProxyCallback, the base of callbacks that wrap another one, and CallbackFactory.

A proxy forwards every hook to the callback it wraps, and reports as
overridden exactly the hooks the wrapped callback uses, so that wrapping a
callback adds no call to hooks (in particular the per-step ones) it leaves
alone.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainstack.loop import Callback, RunArgs, RunContext, RunValues

__all__ = ["ProxyCallback", "CallbackFactory"]


class ProxyCallback(Callback):
    """Forwards all hooks to ``cb``; subclasses change which calls get through.

    ``chief_only`` is copied from ``cb`` when the proxy is made. The name is
    ``"<prefix>-<name of cb>"``, the prefix being ``"Proxy"`` here.
    """

    _name_prefix = "Proxy"

    def __init__(self, cb: Callback) -> None:
        if not isinstance(cb, Callback):
            raise TypeError(f"{type(self).__name__} wraps a Callback, got {cb!r} ({type(cb).__name__})")
        self.cb = cb
        self.chief_only = cb.chief_only

    def overrides(self, hook: str) -> bool:
        """A proxy is active on a hook exactly when the wrapped callback is."""
        return self.cb.overrides(hook)

    def _default_name(self) -> str:
        return f"{self._name_prefix}-{self.cb.name}"

    def last_checkpoint(self) -> tuple[int, str] | None:
        return self.cb.last_checkpoint()

    def _setup_graph(self) -> None:
        self.cb.setup_graph(self.trainer)

    def _before_train(self) -> None:
        self.cb.before_train()

    def _before_epoch(self) -> None:
        self.cb.before_epoch()

    def _before_run(self, ctx: RunContext) -> RunArgs | None:
        return self.cb.before_run(ctx)

    def _after_run(self, run_context: RunContext, run_values: RunValues) -> None:
        self.cb.after_run(run_context, run_values)

    def _trigger_step(self) -> None:
        self.cb.trigger_step()

    def _after_epoch(self) -> None:
        self.cb.after_epoch()

    def _trigger_epoch(self) -> None:
        self.cb.trigger_epoch()

    def _trigger(self) -> None:
        self.cb.trigger()

    def _after_train(self) -> None:
        self.cb.after_train()


# the factory's hooks and the loop hook each one makes active
_FACTORY_HOOKS = {"setup_graph": "setup_graph", "before_train": "before_train",
                  "trigger": "trigger_epoch", "after_train": "after_train"}


class CallbackFactory(Callback):
    """A callback made of functions, each taking the callback itself.

    ``trigger`` runs at every epoch's end (and whenever a scheduler such as
    :class:`~trainstack.callbacks.PeriodicTrigger` triggers it). Only the
    hooks given a function are active.
    """

    def __init__(self, setup_graph: Callable[[Any], Any] | None = None,
                 before_train: Callable[[Any], Any] | None = None,
                 trigger: Callable[[Any], Any] | None = None,
                 after_train: Callable[[Any], Any] | None = None) -> None:
        fns = {"setup_graph": setup_graph, "before_train": before_train,
               "trigger": trigger, "after_train": after_train}
        for arg, fn in fns.items():
            if fn is not None and not callable(fn):
                raise TypeError(f"CallbackFactory({arg}=...) expects a function taking the "
                                f"callback, got {fn!r} ({type(fn).__name__})")
        self._fns = {k: fn for k, fn in fns.items() if fn is not None}

    def overrides(self, hook: str) -> bool:
        return any(_FACTORY_HOOKS[k] == hook for k in self._fns)

    def _default_name(self) -> str:
        given = ", ".join(f"{k}={getattr(fn, '__qualname__', repr(fn))}" for k, fn in self._fns.items())
        return f"CallbackFactory({given})"

    def _call(self, hook: str) -> None:
        fn = self._fns.get(hook)
        if fn is not None:
            fn(self)

    def _setup_graph(self) -> None:
        self._call("setup_graph")

    def _before_train(self) -> None:
        self._call("before_train")

    def _trigger(self) -> None:
        self._call("trigger")

    def _after_train(self) -> None:
        self._call("after_train")
