"""TF1 ops that a tensorpack callback builds in ``_setup_graph`` and runs in its other hooks.

tensorpack's callbacks built graph ops once and ran them later in the trainer's session, e.g.
WGAN.py's weight clipping::

    class ClipCallback(Callback):
        def _setup_graph(self):
            ops = [tf.assign(v, tf.clip_by_value(v, -0.01, 0.01))
                   for v in tf.trainable_variables() if v.op.name.startswith('discrim/')]
            self._op = tf.group(*ops, name='clip')

        def _trigger_step(self):
            self._op.run()

In TensorFlow 2 that code would run eagerly (clipping once, at setup) on an empty collection. While
a trainer of this layer trains, the ``_setup_graph`` of each callback whose class is not
trainstack's (the script's own) is traced as TF1 code into a graph of its own
(``tf.compat.v1.wrap_function``): ``tf.trainable_variables()``/``get_collection`` there list the
model's variables, as TF1 code saw them (``v.op.name == 'discrim/conv0/W'``), and the ops read and
write the variables themselves. In that callback's other hooks the graph's session is the default
one, so ``op.run()``, ``tensor.eval()`` and ``tf.get_default_session().run(fetches)`` run what they
name, each time. ``trainer.sess.run(op)`` stays the trainer's: it runs step functions. After
training the callback is as it was (the hooks are wrapped on the instance for that time only).
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import tensorflow as tf

from trainstack.loop import Callback

from . import graph_collections
from .room import PATCHES
from .switch import Frame, engaged

__all__ = ["CallbackGraphs", "CallbackSession", "script_callbacks"]

#: the hooks run with the callback's session as the default one (setup_graph builds the graph)
_RUN_HOOKS = ("_before_train", "_before_epoch", "_before_run", "_after_run", "_trigger_step",
              "_after_epoch", "_trigger_epoch", "_trigger", "_after_train")


def _is_trainstacks(cls: type, method: str) -> bool:
    """Whether ``cls.method`` is defined by trainstack (or is Callback's own)."""
    owner = next((k for k in cls.__mro__ if method in k.__dict__), Callback)
    return owner.__module__.split(".")[0] == "trainstack"


def script_callbacks(callbacks: Iterable[Callback]) -> list[Callback]:
    """The callbacks among ``callbacks`` (and those that trainstack's wrappers such as
    ``PeriodicTrigger`` hold) whose ``_setup_graph`` is the script's own."""
    found: dict[int, Callback] = {}
    stack = list(callbacks)
    while stack:
        cb = stack.pop()
        if id(cb) in found or not isinstance(cb, Callback):
            continue
        if not _is_trainstacks(type(cb), "_setup_graph"):
            found[id(cb)] = cb
        inner = getattr(cb, "cb", None)
        stack.extend([inner] if isinstance(inner, Callback) else list(getattr(cb, "cbs", None) or []))
    return list(found.values())


class CallbackSession:
    """The default session in a script callback's hooks: runs fetches of the callback's TF1 graph
    (an op, a tensor, or a list/tuple/dict of them), each set pruned into a function once."""

    def __init__(self, wrapped: Any) -> None:
        self._wrapped = wrapped
        self._functions: dict[Any, Callable[[], Any]] = {}

    @property
    def graph(self) -> tf.Graph:
        """The callback's graph (what ``op.run()`` checks the default session against)."""
        return self._wrapped.graph

    def run(self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None) -> Any:
        """TF1's ``sess.run(fetches)``: the values of ``fetches`` (None for an op)."""
        if feed_dict:
            raise TypeError("sess.run(..., feed_dict=...) in a callback: the callback's graph has no "
                            "placeholders to feed in TensorFlow 2; compute the value in the graph")
        flat = tf.nest.flatten(fetches)
        key = tuple(id(f) for f in flat)
        function = self._functions.get(key)
        if function is None:
            function = self._functions[key] = self._wrapped.prune([], flat)
        values = [None if v is None else v.numpy() for v in function()]   # None: an op, run
        return tf.nest.pack_sequence_as(fetches, values)

    def as_default(self) -> Any:
        """This session as the thread's default (TF1's ``sess.as_default()``)."""
        from tensorflow.python.framework import stack  # the thread's default-session stack
        return stack.default_session(self)


def _with_session(method: Callable[..., Any], session: CallbackSession) -> Callable[..., Any]:
    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        with session.as_default():
            return method(*args, **kwargs)
    return run


def _build(trainer: Any, cb: Callback) -> None:
    """Trace ``cb``'s own ``_setup_graph`` as TF1 code into its graph; wrap its hooks on the
    instance to run with that graph's session as the default one."""
    setup = type(cb)._setup_graph.__get__(cb)
    try:
        tower_funcs = [trainer.tower_func]
    except AttributeError:  # a trainer with no tower function: TensorFlow's own collections
        tower_funcs = []
    frame = Frame(scratch={graph_collections.CALLBACK_GRAPH: tower_funcs})

    def body() -> None:
        with engaged(PATCHES, frame):
            setup()

    session = CallbackSession(tf.compat.v1.wrap_function(body, []))
    for hook in _RUN_HOOKS:
        if not _is_trainstacks(type(cb), hook):
            cb.__dict__[hook] = _with_session(getattr(type(cb), hook).__get__(cb), session)


class CallbackGraphs:
    """The script callbacks registered with a trainer: each builds its TF1 graph in
    ``_setup_graph`` and runs it in its other hooks (see the module) until :meth:`restore`."""

    def __init__(self, trainer: Any) -> None:
        self._trainer = trainer
        self._callbacks: list[Callback] = []

    def add(self, callback: Callback) -> None:
        """``callback`` and the script callbacks trainstack's wrappers in it hold."""
        for cb in script_callbacks([callback]):
            if all(cb is not c for c in self._callbacks):
                cb.__dict__["_setup_graph"] = functools.partial(_build, self._trainer, cb)
                self._callbacks.append(cb)

    def restore(self) -> None:
        """Each callback's hooks are its class's again."""
        for cb in self._callbacks:
            for hook in ("_setup_graph", *_RUN_HOOKS):
                cb.__dict__.pop(hook, None)
        self._callbacks.clear()
