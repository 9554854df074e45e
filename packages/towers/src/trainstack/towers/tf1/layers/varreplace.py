"""tensorpack's ``tfutils.varreplace``: ``custom_getter_scope``, ``remap_variables``, ``freeze_variables``.

Each enters the current ``tf.compat.v1.variable_scope`` again with a custom getter (without a new
name scope), as tensorpack did; the room's ``get_variable`` calls the getters of the enclosing
scopes, innermost first (``tf1/variables.py``). So, in a tower function::

    with remap_variables(lambda v: quantize(v)):
        x = FullyConnected('fc', x, 10)      # fc/W and fc/b are used quantized
    with freeze_variables(stop_gradient=False, skip_collection=True):
        x = Conv2D('conv0', x, 32, 3)        # conv0/W, conv0/b are created not trainable

The getter applies where a variable is requested inside the block, in every tower and trace.
"""
from __future__ import annotations

import contextlib
import logging
from typing import Any, Callable, Iterator

import tensorflow as tf

__all__ = ["custom_getter_scope", "remap_variables", "freeze_variables"]

logger = logging.getLogger("trainstack.towers")


@contextlib.contextmanager
def custom_getter_scope(custom_getter: Callable[..., Any]) -> Iterator[None]:
    """The current variable scope with ``custom_getter`` (TF1's ``custom_getter(getter, name, ...)``)
    added inside the ones it has."""
    scope = tf.compat.v1.get_variable_scope()
    with tf.compat.v1.variable_scope(scope, custom_getter=custom_getter, auxiliary_name_scope=False):
        yield


def remap_variables(fn: Callable[[Any], Any]) -> Any:
    """A context in which every variable requested is used as ``fn(variable)``."""
    def custom_getter(getter: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return fn(getter(*args, **kwargs))

    return custom_getter_scope(custom_getter)


def freeze_variables(stop_gradient: bool = True, skip_collection: bool = False) -> Any:
    """A context that freezes the variables requested in it.

    ``stop_gradient``: each is used through ``tf.stop_gradient`` (a tensor, not a variable): no
    gradient flows into it through this use. ``skip_collection``: each is created not trainable
    (so only on its creation, the first build), so no trainer trains it; the variable's other
    uses (``regularize_cost``) are then not trained either.
    """
    def custom_getter(getter: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        trainable = kwargs.get("trainable", True)
        name = args[0] if args else kwargs.get("name")
        if skip_collection:
            kwargs["trainable"] = False
        v = getter(*args, **kwargs)
        if trainable and skip_collection and not isinstance(v, tf.Variable):
            logger.warning("freeze_variables(): another custom getter returned %r for %s, not a variable; "
                           "it may still be trained", v, name)
        if trainable and stop_gradient:
            v = tf.stop_gradient(v, name="freezed_" + name.replace("/", "_"))
        return v

    return custom_getter_scope(custom_getter)
