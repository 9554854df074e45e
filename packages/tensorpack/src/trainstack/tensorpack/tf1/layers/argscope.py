"""tensorpack's ``argscope``: default arguments for layer functions, by layer.

``with argscope(Conv2D, kernel_size=3, activation=tf.nn.relu): ...`` makes every ``Conv2D``
called inside take those arguments unless given explicitly. An argscope entered inside a
tower function (the usual place, ``build_graph``) belongs to the thread building that tower:
a multi-device trainer builds its towers in one thread each (``tf.distribute``'s replica
threads), and one tower's scopes must not leak into another's. One entered outside any tower
(around model-building code at a script's top level) is seen by every thread, as tensorpack's
one global stack was.
"""
from __future__ import annotations

import collections
import contextlib
import functools
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

from ..switch import current
from .context import log_shape_once

__all__ = ["argscope", "get_arg_scope", "enable_argscope_for_function", "enable_argscope_for_module"]

ArgScope = collections.defaultdict[str, dict]

#: scopes entered outside any tower, innermost last
_outside: list = []
_local = threading.local()


def _in_tower() -> bool:
    frame = current()
    return frame is not None and frame.tower is not None


def _thread_stack() -> list:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def get_arg_scope() -> ArgScope:
    """The arguments in effect: ``{layer function name: {argument: value}}``."""
    stack = _thread_stack() or _outside
    return stack[-1] if stack else collections.defaultdict(dict)


@contextlib.contextmanager
def argscope(layers: Any, **kwargs: Any) -> Iterator[None]:
    """Inside, each of ``layers`` (a layer function or a list of them) takes ``kwargs`` as its
    defaults; explicit arguments (and inner argscopes) override them."""
    if not isinstance(layers, (list, tuple)):
        layers = [layers]
    for layer in layers:
        if not getattr(layer, "__argscope_enabled__", False):
            raise TypeError(f"argscope({getattr(layer, '__name__', layer)!r}): not a layer function; argscope "
                            "takes functions registered with @layer_register or wrapped by "
                            "enable_argscope_for_function")
    scope = collections.defaultdict(dict, {name: dict(args) for name, args in get_arg_scope().items()})
    for layer in layers:
        scope[layer.__name__].update(kwargs)
    stack = _thread_stack() if _in_tower() else _outside
    stack.append(scope)
    try:
        yield
    finally:
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is scope:
                del stack[i]
                break


def enable_argscope_for_function(func: Callable, log_shape: bool = True) -> Callable:
    """``func`` taking its defaults from ``argscope(wrapped_func, ...)`` (by ``func.__name__``);
    with ``log_shape``, the shapes of its first input and output are logged once per model."""
    if not callable(func):
        raise TypeError(f"enable_argscope_for_function() takes a function, got {func!r}")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        actual = dict(get_arg_scope()[func.__name__])
        actual.update(kwargs)
        out = func(*args, **actual)
        if log_shape and args:
            log_shape_once(kwargs.get("name", func.__name__), args[0], out[0] if isinstance(out, tuple) else out)
        return out

    wrapped.__argscope_enabled__ = True  # type: ignore[attr-defined]  # a mark on the function
    return wrapped


def enable_argscope_for_module(module: types.ModuleType, log_shape: bool = True) -> None:
    """Make the functions of ``module`` take argscope defaults (those in its ``__all__`` when it
    has one; a function already enabled is left as it is): ``tfv1.layers`` (TF1's ``tf.layers``,
    as tensorpack's ``enable_argscope_for_module(tf.layers)``) or one of the script's own modules.
    TensorFlow's and Keras' modules are refused: the room replaces nothing in them."""
    try:
        name = module.__name__
    except AttributeError:  # tf.compat.v1.layers: Keras 3's lazy module has no __name__
        name = "tensorflow.compat.v1.layers"
    if not isinstance(module, types.ModuleType):
        raise TypeError(f"enable_argscope_for_module() takes a module, got {module!r}")
    if name.split(".")[0] in ("tensorflow", "keras", "tf_keras"):
        raise TypeError(f"enable_argscope_for_module({name}): trainstack replaces nothing in TensorFlow or Keras "
                        "(TensorFlow 2's tf.compat.v1.layers has none of TF1's layer functions); for TF1's "
                        "tf.layers use tfv1.layers (from trainstack.tensorpack import tfv1 as tf; "
                        "enable_argscope_for_module(tf.layers)), or wrap your own functions: "
                        "conv = enable_argscope_for_function(my_conv)")
    names = getattr(module, "__all__", None)
    for attr, obj in list(vars(module).items()):
        if (isinstance(obj, types.FunctionType) and (names is None or attr in names)
                and not getattr(obj, "__argscope_enabled__", False)):
            setattr(module, attr, enable_argscope_for_function(obj, log_shape=log_shape))
