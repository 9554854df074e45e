"""tensorpack's argument conventions for its layer functions (``convert_to_tflayer_args``).

tensorpack's layers take ``tf.layers``' argument names and, for older scripts, their own:
``out_channel`` for ``filters``, ``kernel_shape`` for ``kernel_size``, ``stride`` for
``strides``, ``nl`` for ``activation``, ``W_init``/``b_init`` for the initializers, and
``NHWC``/``NCHW`` for ``data_format``. The first few arguments may be positional (``Conv2D('c',
x, 32, 3)``) and then override the same arguments given by an ``argscope``.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trainstack.loop.checks import check_pair

from .context import layer_label

__all__ = ["tflayer_args", "layout", "shape2d", "shape4d", "refuse_regularizers"]

_KERAS_FORMAT = {"NHWC": "channels_last", "NCHW": "channels_first",
                 "channels_last": "channels_last", "channels_first": "channels_first"}


def layout(value: str, layer: str, *, keras: bool = False) -> str:
    """``value`` as ``'NHWC'``/``'NCHW'`` (``keras=True``: ``'channels_last'``/``'channels_first'``)."""
    if value not in _KERAS_FORMAT:
        raise ValueError(f"{layer}(data_format={value!r}): expected 'channels_last' (NHWC) or "
                         "'channels_first' (NCHW)")
    keras_format = _KERAS_FORMAT[value]
    if keras:
        return keras_format
    return "NHWC" if keras_format == "channels_last" else "NCHW"


def shape2d(value: Any, what: str = "shape", layer: str = "FixedUnPooling") -> list[int]:
    """``[a, a]`` for an int ``a``, ``[a, b]`` for a pair (tensorpack's ``shape2d``), positive."""
    return check_pair(layer_label(layer), what, value, minimum=1)


def shape4d(value: Any, fmt: str, what: str = "strides", layer: str = "Conv2D") -> list[int]:
    """``[1, a, b, 1]`` (NHWC) or ``[1, 1, a, b]`` (NCHW) from an int or a pair."""
    a, b = shape2d(value, what, layer)
    return [1, a, b, 1] if fmt == "NHWC" else [1, 1, a, b]


def refuse_regularizers(layer: str, **regularizers: Any) -> None:
    """TF1 layers put ``kernel_regularizer=``'s losses in a graph collection TF2 does not have."""
    given = [name for name, value in regularizers.items() if value is not None]
    if given:
        raise TypeError(f"{layer}({given[0]}=...): TF1's REGULARIZATION_LOSSES collection does not exist in "
                        "TensorFlow 2; add regularize_cost('<layer name>/W', l2_regularizer(...)) to the cost "
                        "in build_graph instead")


def _common(kwargs: dict[str, Any], layer: str) -> dict[str, Any]:
    if kwargs.get("data_format") is not None:
        kwargs["data_format"] = layout(kwargs["data_format"], layer, keras=True)
    if "nl" in kwargs:
        if "activation" in kwargs:
            raise TypeError(f"{layer}(): nl= and activation= name the same argument; give one")
        kwargs["activation"] = kwargs.pop("nl")
    for old, new in (("W_init", "kernel_initializer"), ("b_init", "bias_initializer")):
        if old in kwargs:
            if new in kwargs:
                raise TypeError(f"{layer}(): {old}= and {new}= name the same argument; give one")
            kwargs[new] = kwargs.pop(old)
    return kwargs


def tflayer_args(args_names: Sequence[str], name_mapping: Mapping[str, str]) -> Callable[[Callable], Callable]:
    """Decorator: ``f(inputs, *args, **kwargs)`` calls ``f(inputs, **named)``, where the
    positional ``args`` are named by ``args_names`` (and override the keyword arguments, which
    come from the argscope too), and keyword names are mapped by ``name_mapping`` and the common
    renames (module docstring)."""
    args_names = list(args_names)

    def decorator(func: Callable) -> Callable:
        @functools.wraps(func)
        def decorated(inputs: Any, *args: Any, **kwargs: Any) -> Any:
            layer = func.__name__
            if len(args) > len(args_names):
                allowed = ", ".join(args_names) or "none"
                raise TypeError(f"{layer}() takes at most {len(args_names)} positional arguments after its "
                                f"input ({allowed}); give the others by keyword")
            named: dict[str, Any] = {}
            for name, value in _common(dict(kwargs), layer).items():
                new = name_mapping.get(name)
                if new is not None and new in kwargs:
                    raise TypeError(f"{layer}(): {name}= and {new}= name the same argument; give one")
                named[new or name] = value
            named.update(zip(args_names, args))
            return func(inputs, **named)

        return decorated

    return decorator
