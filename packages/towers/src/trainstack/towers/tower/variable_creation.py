"""Creating a model's variables eagerly, in one trace of its tower function.

A ``tf.function`` that creates variables on its first trace traces a second time, without
creating them, before its first call. A trainer (or predictor) traces its tower function once
before its step, so that the model's variables exist; made as below, those variables are not
ones the trace created, so the trace is not repeated, and the step's own trace creates none.

:func:`create_variables_outside_function` is the variable creator for it: each variable is
made eagerly from its initializer (Keras layers and ``get_variable`` give initializer
functions), outside the function, and marked as not to be lifted (``tf.Variable``'s
``experimental_enable_variable_lifting``), which is what keeps ``tf.function`` from tracing
again. A variable made from a tensor the function computes cannot be made that way: it is left
to ``tf.function``'s own lifting (and its second trace), or refused with ``strict`` (a
``tf.distribute`` strategy cannot copy it to its replicas). Under a strategy the variables are
made eagerly but ``tf.function`` traces twice (see ``create``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from trainstack.callbacks.eager_state import made_outside_traces

__all__ = ["create_variables_outside_function", "trace_creating_variables"]


def create_variables_outside_function(owner: str, *, strict: bool = True) -> Callable[..., Any]:
    """A variable creator (for ``tf.variable_creator_scope``) that creates variables with an
    initializer eagerly even while a function is traced (see the module docstring).

    A ``tf.distribute`` strategy initializes each copy from the first one (or from
    worker 0), which it cannot do for a variable created inside a ``tf.function``
    (TensorFlow cannot lift such an initializer out of the function); Keras layers
    create their variables from initializer functions, which run as well outside.
    ``owner`` (the trainer's name) goes into the error for a variable made from a
    tensor computed in the tower function; with ``strict=False`` that variable is left to
    ``tf.function``. Use it around the variables' creation::

        with strategy.scope(), tf.variable_creator_scope(create_variables_outside_function("MyTrainer")):
            ...  # build the model's variables
    """
    def create(next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        # under a tf.distribute strategy, the trace that creates a distributed variable reads its
        # first copy, not the variable: let tf.function trace again, where the variable exists
        make = _next if tf.distribute.has_strategy() else made_outside_traces
        initial_value = kwargs.get("initial_value")
        if callable(initial_value) or not tf.is_symbolic_tensor(initial_value):
            with tf.init_scope():
                return make(next_creator, **kwargs)
        static = tf.get_static_value(initial_value)
        if static is not None:
            with tf.init_scope():
                return make(next_creator, **{**kwargs, "initial_value": static})
        if not strict:
            return next_creator(**kwargs)
        raise ValueError(
            f"{owner}: variable {kwargs.get('name')!r} is created from a tensor computed inside the "
            "tower function, which a tf.distribute strategy cannot copy to every replica. Create it "
            "with an initializer (a Keras layer's add_weight, or tf.Variable(lambda: ...)) or before "
            "setup_graph")

    return create


def _next(next_creator: Callable[..., Any], **kwargs: Any) -> Any:
    return next_creator(**kwargs)


def trace_creating_variables(fn: Callable[..., Any], input_signature: Sequence[Any], owner: str) -> None:
    """Trace ``fn`` once on symbolic inputs of ``input_signature``, creating the variables it
    makes eagerly (see the module docstring); the trace is dropped."""
    with tf.variable_creator_scope(create_variables_outside_function(owner, strict=False)):
        tf.function(fn, input_signature=list(input_signature), autograph=False).get_concrete_function()
