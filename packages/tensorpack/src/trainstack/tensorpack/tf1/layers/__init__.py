"""tensorpack's layer functions (``tensorpack.models``) on TensorFlow 2, in a tower function.

``Conv2D('conv0', x, 32, 3)``, ``BatchNorm('bn', x)``, ``LinearWrap(x).Conv2D(...)...()``
and ``argscope`` work as in tensorpack 0.11, with its signatures, defaults and variable names
(``conv0/W``, ``conv0/b``, ``bn/gamma``, ``bn/mean/EMA``, ...). Each layer runs under
``tf.compat.v1.variable_scope(name)`` and makes its variables with ``tf.compat.v1.get_variable``,
which the room gives TF1's meaning while a tower is traced (``tf1/variables.py``): created on
the first build of the first tower, reused on every later trace and tower, recorded by the
tower function (checkpoints, predictors, ``SmartInit`` of a tensorpack ``.npz`` see them by
name). One module per concept:

- registry.py    ``layer_register``, ``VariableHolder``
- argscope.py    ``argscope``, ``get_arg_scope``, ``enable_argscope_for_function/module``
- args.py        tensorpack's argument names (``out_channel``, ``nl``, ``W_init``, ``NCHW``...)
- context.py     the tower a layer is built in, its variables, the shape log
- conv.py        ``Conv2D``, ``Conv2DTranspose`` (``Deconv2D``)
- fc.py          ``FullyConnected``
- batch_norm.py  ``BatchNorm`` (moving averages updated in the training step)
- batch_renorm.py ``BatchRenorm`` (Batch Renormalization, TF1's ``renorm=True``)
- norm.py        ``LayerNorm``, ``InstanceNorm``
- pooling.py     ``MaxPooling``, ``AvgPooling``, ``GlobalAvgPooling``, ``FixedUnPooling``
- nonlin.py      ``BNReLU``, ``PReLU``, ``Maxout``
- dropout.py     ``Dropout``
- linear_wrap.py ``LinearWrap``, ``ConcatWith``
- varreplace.py  ``custom_getter_scope``, ``remap_variables``, ``freeze_variables``
- tf_layers.py   TF1's functional ``tf.layers`` (``conv2d``, ``dense``, ...), which ``tfv1.layers`` is
"""
from .argscope import argscope, enable_argscope_for_function, enable_argscope_for_module, get_arg_scope
from .batch_norm import BatchNorm
from .batch_renorm import BatchRenorm
from .context import disable_layer_logging
from .conv import Conv2D, Conv2DTranspose, Deconv2D
from .dropout import Dropout
from .fc import FullyConnected
from .linear_wrap import ConcatWith, LinearWrap
from .nonlin import BNReLU, Maxout, PReLU
from .norm import InstanceNorm, LayerNorm
from .pooling import AvgPooling, FixedUnPooling, GlobalAvgPooling, MaxPooling
from .registry import VariableHolder, layer_register
from .varreplace import custom_getter_scope, freeze_variables, remap_variables

__all__ = [
    "Conv2D", "Conv2DTranspose", "Deconv2D", "FullyConnected", "BatchNorm", "BatchRenorm", "LayerNorm", "InstanceNorm",
    "MaxPooling", "AvgPooling", "GlobalAvgPooling", "FixedUnPooling", "Dropout", "BNReLU", "PReLU", "Maxout",
    "ConcatWith", "LinearWrap", "layer_register", "VariableHolder", "disable_layer_logging", "argscope",
    "get_arg_scope", "enable_argscope_for_function", "enable_argscope_for_module", "custom_getter_scope",
    "remap_variables", "freeze_variables",
]
