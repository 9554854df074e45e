"""tensorpack 0.11's ``tensorpack.models.common``: its names from ``trainstack.tensorpack.tf1``, and tensorpack's
``rename_tflayer_get_variable`` over the TF1 room's custom getters."""
from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from trainstack.tensorpack.tf1 import VariableHolder, custom_getter_scope, disable_layer_logging, layer_register

from .._replaced import stand_in_names, unprovided

__all__ = ["layer_register", "VariableHolder", "rename_tflayer_get_variable",
           "disable_layer_logging"] + stand_in_names(__name__)

#: tf.layers' variable basenames -> tensorpack's
_TFLAYER_NAMES = {"kernel": "W", "bias": "b", "moving_mean": "mean/EMA", "moving_variance": "variance/EMA"}


def rename_tflayer_get_variable() -> AbstractContextManager[None]:
    """A context where ``get_variable`` (``tfv1.layers``' too) names a variable ``kernel`` ``W``, ``bias`` ``b``,
    ``moving_mean`` ``mean/EMA`` and ``moving_variance`` ``variance/EMA``, as tensorpack's::

        with rename_tflayer_get_variable():
            x = tf.layers.conv2d(input, 3, 3, name='conv0')   # variables conv0/W, conv0/b
    """

    def custom_getter(getter: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        splits = name.split("/")
        if splits[-1] in _TFLAYER_NAMES:
            splits[-1] = _TFLAYER_NAMES[splits[-1]]
            name = "/".join(splits)
        return getter(name, *args, **kwargs)

    return custom_getter_scope(custom_getter)


__getattr__ = unprovided(__name__)
