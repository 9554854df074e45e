"""tensorpack 0.11's ``tensorpack.models``: its names from ``trainstack.tensorpack.tf1`` and ``common``'s
``rename_tflayer_get_variable`` and ``shape_utils``' names."""
from trainstack.tensorpack.tf1 import (
    AvgPooling,
    BatchNorm,
    BatchRenorm,
    BNReLU,
    ConcatWith,
    Conv2D,
    Conv2DTranspose,
    Deconv2D,
    Dropout,
    FixedUnPooling,
    FullyConnected,
    GlobalAvgPooling,
    InstanceNorm,
    LayerNorm,
    LinearWrap,
    Maxout,
    MaxPooling,
    PReLU,
    VariableHolder,
    disable_layer_logging,
    l1_regularizer,
    l2_regularizer,
    layer_register,
    regularize_cost,
)

from .._replaced import stand_in_names, unprovided
from .common import rename_tflayer_get_variable
from .shape_utils import DynamicLazyAxis, StaticDynamicAxis, StaticDynamicShape, StaticLazyAxis

__all__ = [
    "BatchNorm", "BatchRenorm", "layer_register", "VariableHolder", "disable_layer_logging", "Conv2D", "Deconv2D",
    "Conv2DTranspose", "FullyConnected", "LayerNorm", "InstanceNorm", "LinearWrap", "Maxout", "PReLU", "BNReLU",
    "MaxPooling", "FixedUnPooling", "AvgPooling", "GlobalAvgPooling", "regularize_cost", "l2_regularizer",
    "l1_regularizer", "Dropout", "ConcatWith", "rename_tflayer_get_variable",
    "StaticDynamicAxis", "DynamicLazyAxis", "StaticLazyAxis", "StaticDynamicShape"
]

__all__ += stand_in_names(__name__)

__getattr__ = unprovided(__name__)
