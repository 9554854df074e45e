"""tensorpack's decorators over TF1 variable scopes (``tensorpack.tfutils.scope_utils``).

- :func:`auto_reuse_variable_scope`: a function called a second time under the same variable
  scope in the same graph reuses that scope's variables, as a GAN's discriminator applied to
  the real and to the fake images does. tensorpack 0.11's rule, exactly: the function opens no
  scope of its own; its first call in a (graph, variable-scope name) runs in the scope as it
  is (its reuse inherited from the parents), every later one runs in the same scope re-entered
  with ``reuse=True`` and no new name scope (``auxiliary_name_scope=False``).
- :func:`under_variable_scope`: the function runs under ``variable_scope(<its name>)``.

A trainstack tower is traced in a graph of its own each time it is built, so a discriminator
called twice in ``build_graph`` creates its variables on the first call of the first build and
reuses them on the second call, on later traces and in the other towers (see
:mod:`.variables`). Outside a tower they are TF1's decorators over TensorFlow's own
``get_variable``.
"""
from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import tensorflow as tf

__all__ = ["auto_reuse_variable_scope", "under_variable_scope"]

F = TypeVar("F", bound=Callable[..., Any])


def auto_reuse_variable_scope(func: F) -> F:
    """Reuse the current variable scope when ``func`` was already called under it in this graph
    (tensorpack's ``auto_reuse_variable_scope``; see the module docstring)::

        @auto_reuse_variable_scope
        def discriminator(self, imgs): ...

        with tf.variable_scope('discrim'):
            real = self.discriminator(image_pos)   # creates discrim/conv0/W, ...
            fake = self.discriminator(image_gen)   # reuses them
    """
    # the variable-scope names func was called under, per graph (weak: a traced graph may go away)
    used: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        scope = tf.compat.v1.get_variable_scope()
        names = used.setdefault(tf.compat.v1.get_default_graph(), set())
        if scope.name in names:
            with tf.compat.v1.variable_scope(scope, reuse=True, auxiliary_name_scope=False):
                return func(*args, **kwargs)
        names.add(scope.name)
        return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def under_variable_scope() -> Callable[[F], F]:
    """A decorator running the function under ``variable_scope(<the function's name>)``
    (tensorpack's ``under_variable_scope()``)."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with tf.compat.v1.variable_scope(func.__name__):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
