"""State made once while a function is traced, without making ``tf.function`` trace again.

A ``tf.function`` that creates variables on its first trace traces a second time, without
creating them, before its first call. State a trace makes eagerly (under ``tf.init_scope``) and
keeps for later traces, such as a summary's moving average or a model's variables made from
their initializers, is not the trace's own: made under :func:`eager_state`, or with the
:func:`made_outside_traces` creator, it is marked as not to be lifted (``tf.Variable``'s
``experimental_enable_variable_lifting``), so ``tf.function`` does not count it, and keeps its
one trace.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import tensorflow as tf

__all__ = ["eager_state", "made_outside_traces"]


def made_outside_traces(next_creator: Callable[..., Any], **kwargs: Any) -> Any:
    """A variable creator (for ``tf.variable_creator_scope``), to be used under
    ``tf.init_scope``: the variable is eager and not one the function being traced created."""
    return next_creator(**{**kwargs, "experimental_enable_variable_lifting": False})


@contextlib.contextmanager
def eager_state() -> Iterator[None]:
    """``tf.init_scope()``, in which the variables made are not counted as the trace's own."""
    with tf.init_scope(), tf.variable_creator_scope(made_outside_traces):
        yield
