"""tensorpack's ``LinearWrap`` (a chain of one-input layers) and ``ConcatWith``.

``LinearWrap(image).Conv2D('conv0', 32).MaxPooling('pool0', 2).FullyConnected('fc', 10)()``
calls each registered layer on the previous output (the name first when the layer takes one);
``.tf.nn.relu()`` calls TensorFlow 1's function (``tf.compat.v1``, what ``tf`` was to tensorpack:
``.tf.image.resize_nearest_neighbor([16, 16])``), ``.apply(f, ...)`` calls ``f(x, ...)`` and
``.apply2(f, name, ...)`` calls ``f(name, x, ...)``; calling the wrap returns the tensor.
"""
from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from .registry import get_registered_layer, layer_register

__all__ = ["LinearWrap", "ConcatWith"]


class LinearWrap:
    """A tensor, and the layers to apply to it in a chain (see the module docstring)."""

    class _TFModuleFunc:
        def __init__(self, module: types.ModuleType, tensor: Any) -> None:
            self._mod, self._t = module, tensor

        def __getattr__(self, name: str) -> Any:
            attr = getattr(self._mod, name)
            if isinstance(attr, types.ModuleType):
                return LinearWrap._TFModuleFunc(attr, self._t)
            return lambda *args, **kwargs: LinearWrap(attr(self._t, *args, **kwargs))

    def __init__(self, tensor: Any) -> None:
        self._t = tensor

    def __getattr__(self, layer_name: str) -> Any:
        if layer_name.startswith("__"):
            raise AttributeError(layer_name)
        layer = get_registered_layer(layer_name)
        if layer is not None:
            if layer.use_scope:  # type: ignore[attr-defined]  # set by layer_register
                return lambda name, *args, **kwargs: LinearWrap(layer(name, self._t, *args, **kwargs))

            def call(*args: Any, **kwargs: Any) -> LinearWrap:
                if args and isinstance(args[0], str):
                    return LinearWrap(layer(args[0], self._t, *args[1:], **kwargs))
                return LinearWrap(layer(self._t, *args, **kwargs))

            return call
        if layer_name == "tf":
            return LinearWrap._TFModuleFunc(tf.compat.v1, self._t)
        raise AttributeError(f"LinearWrap.{layer_name}: neither a registered layer nor 'tf'. Did you forget to "
                             "take the tensor out of the LinearWrap (call it: wrap())?")

    def apply(self, func: Callable, *args: Any, **kwargs: Any) -> LinearWrap:
        """``LinearWrap(func(tensor, *args, **kwargs))``."""
        return LinearWrap(func(self._t, *args, **kwargs))

    def apply2(self, func: Callable, *args: Any, **kwargs: Any) -> LinearWrap:
        """``LinearWrap(func(args[0], tensor, *args[1:], **kwargs))`` (a layer taking a name first)."""
        return LinearWrap(func(args[0], self._t, *args[1:], **kwargs))

    def __call__(self) -> Any:
        return self._t

    def tensor(self) -> Any:
        """The wrapped tensor."""
        return self._t

    def print_tensor(self) -> LinearWrap:
        """Print the wrapped tensor; returns the wrap."""
        print(self._t)  # noqa: T201 - tensorpack's API
        return self


@layer_register(use_scope=None)
def ConcatWith(x: tf.Tensor, tensor: Any, dim: int) -> tf.Tensor:  # noqa: N802
    """``tf.concat([x] + tensor, dim)`` (``tensor``: one tensor or a list), for LinearWrap."""
    return tf.concat([x] + (list(tensor) if isinstance(tensor, (list, tuple)) else [tensor]), dim)
