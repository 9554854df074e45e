"""tensorpack's ``tensorpack.models``: ``from trainstack.models import *`` where a script had
``from tensorpack.models import *``.

The names are those of the TF1 room (``trainstack.towers.tf1``; ``from trainstack import *``
has them too): the layer functions, ``layer_register``, ``LinearWrap``, and the regularization
helpers tensorpack kept in the same module.
"""
from trainstack.towers.tf1 import (
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

__all__ = [
    "Conv2D", "Conv2DTranspose", "Deconv2D", "FullyConnected", "BatchNorm", "BatchRenorm", "LayerNorm", "InstanceNorm",
    "MaxPooling", "AvgPooling", "GlobalAvgPooling", "FixedUnPooling", "Dropout", "BNReLU", "PReLU", "Maxout",
    "ConcatWith", "LinearWrap", "layer_register", "VariableHolder", "disable_layer_logging",
    "regularize_cost", "l2_regularizer", "l1_regularizer",
]
