"""tensorpack's ``layer_register``: a layer function called as ``Layer('name', x, ...)``.

``@layer_register()`` turns ``f(x, ...)`` into tensorpack's calling convention:
``Conv2D('conv0', x, 32, 3)`` runs ``f(x, 32, 3)`` under ``tf.compat.v1.variable_scope('conv0')``,
so the variables ``f`` makes with ``tf.compat.v1.get_variable('W', ...)`` are named ``conv0/W``
(created on the first build of the first tower and reused on later traces and towers, see
``tf1/variables.py``; a second ``Conv2D('conv0', ...)`` in one tower is TF1's "Variable conv0/W
already exists" error) and its ops live in the name scope ``<tower>/conv0`` (its output
``conv0/output``). The enclosing ``argscope``'s arguments for ``f`` come first, explicit keyword
arguments override them. Layers are registered by function name: ``LinearWrap`` and
``argscope`` find them there.
"""
from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import tensorflow as tf

from .argscope import get_arg_scope
from .context import log_shape_once

__all__ = ["layer_register", "get_registered_layer", "VariableHolder"]

logger = logging.getLogger("trainstack.tensorpack")

F = TypeVar("F", bound=Callable[..., Any])

_CONFLICT = object()
_registry: dict[str, Any] = {}


def _origin(func: Any) -> tuple:
    inner = getattr(func, "__wrapped__", func)
    return getattr(inner, "__module__", None), getattr(inner, "__qualname__", None)


def _register(name: str, func: Callable) -> None:
    """Register ``func`` as ``name``; a second function of that name is a conflict (found by
    :func:`get_registered_layer`), the same one defined again (in a function run on every
    trace) replaces it."""
    if name == "tf":
        raise ValueError("layer_register: a layer cannot be named 'tf' (LinearWrap(x).tf is TensorFlow)")
    known = _registry.get(name)
    same = known is not None and known is not _CONFLICT and _origin(known) == _origin(func)
    _registry[name] = func if known is None or same else _CONFLICT


def get_registered_layer(name: str) -> Callable | None:
    """The layer function registered as ``name`` (``'Conv2D'``), or None."""
    layer = _registry.get(name)
    if layer is _CONFLICT:
        raise KeyError(f"layer {name!r} was registered with @layer_register more than once; rename one of the "
                       "functions")
    return layer


def _check_inputs(layer: str, inputs: Any) -> None:
    first = inputs[0] if isinstance(inputs, (list, tuple)) and inputs else inputs
    if not (tf.is_tensor(first) or isinstance(first, tf.Variable)):
        raise ValueError(f"{layer}(): invalid input {inputs!r:.100}; expected a tf.Tensor (or a list of them)")


def layer_register(log_shape: bool = False, use_scope: bool | None = True) -> Callable[[F], F]:
    """Register a layer function (see the module docstring).

    ``use_scope=True``: called as ``layer('name', x, ...)``; ``None``: the name is optional
    (``Dropout(x)`` or ``Dropout('drop', x)``); ``False``: called as ``layer(x, ...)``.
    ``log_shape``: log the input and output shapes once per model (see ``disable_layer_logging``).
    """
    def wrapper(func: F) -> F:
        layer = func.__name__

        @functools.wraps(func)
        @tf.autograph.experimental.do_not_convert
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            named = bool(args) and isinstance(args[0], str)
            if use_scope and not named:
                raise TypeError(f"{layer}(): the first argument must be the layer's name, e.g. {layer}('name', "
                                f"x, ...); got {args[0] if args else None!r:.60}. Did you forget the name?")
            if named and use_scope is False:
                logger.warning("Call layer %s without a name first, or register it with use_scope=None to "
                               "allow one.", layer)
            if named and len(args) < 2:
                raise TypeError(f"{layer}({args[0]!r}): missing the input tensor after the name")
            name, inputs, rest = (args[0], args[1], args[2:]) if named else (None, args[0] if args else None,
                                                                              args[1:])
            _check_inputs(layer, inputs)
            actual = dict(get_arg_scope()[layer])
            actual.update(kwargs)
            if name is None:
                return func(inputs, *rest, **actual)
            with tf.compat.v1.variable_scope(name) as scope:
                outputs = func(inputs, *rest, **actual)
                if log_shape:
                    log_shape_once(scope.name, inputs, outputs)
            return outputs

        wrapped.use_scope = use_scope  # type: ignore[attr-defined]  # marks on the function
        wrapped.__argscope_enabled__ = True  # type: ignore[attr-defined]
        _register(layer, wrapped)
        if layer == "Conv2DTranspose":
            _register("Deconv2D", wrapped)
        return wrapped  # type: ignore[return-value]

    return wrapper


class VariableHolder:
    """The variables a layer made, as attributes of its output (``conv.variables.W``)."""

    def __init__(self, **variables: Any) -> None:
        self._vars: dict[str, Any] = {}
        for name, var in variables.items():
            setattr(self, name, var)

    def __setattr__(self, name: str, var: Any) -> None:
        if name.startswith("_"):
            super().__setattr__(name, var)
            return
        if name in self._vars:
            raise AttributeError(f"VariableHolder already holds {name!r}")
        self._vars[name] = var

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_vars"][name]
        except KeyError:
            raise AttributeError(f"VariableHolder has no variable {name!r}; it holds {sorted(self._vars)}") from None

    def all(self) -> list[Any]:
        """Every variable held."""
        return list(self._vars.values())


def attach_variables(output: Any, **variables: Any) -> Any:
    """``output.variables = VariableHolder(...)`` (tensorpack's layers return it); skipped where the
    tensor type takes no attributes."""
    try:
        output.variables = VariableHolder(**{k: v for k, v in variables.items() if v is not None})
    except AttributeError:
        pass
    return output
