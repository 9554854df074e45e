"""TF1's ``tf.contrib.slim.nets`` (``tfv1.contrib.slim.nets``): slim's ``resnet_v1`` and its ``resnet_utils``.

The port command rewrites ``from tensorflow.contrib.slim.nets import resnet_v1`` to an import from here.
slim's other networks (``vgg``, ``inception``, ``resnet_v2``, ...) raise a :class:`TF1CallError` naming them.
"""
from __future__ import annotations

from typing import Any

from ..switch import TF1CallError
from . import resnet_utils, resnet_v1

__all__ = ["resnet_v1", "resnet_utils"]


def __getattr__(name: str) -> Any:
    if name.startswith("_"):
        raise AttributeError(name)
    raise TF1CallError(f"tf.contrib.slim.nets.{name}: not provided by trainstack's tfv1.contrib.slim.nets (which has "
                       "resnet_v1 and resnet_utils); write the network with tensorpack's layer functions or Keras 3 "
                       "(keras.applications)")
