"""tensorpack's TF1 world on TensorFlow 2: one room, active only while a tower is traced.

Each module is one TF1 concept (see README.md for the table of concepts,
modules and the tests that prove them):

- switch.py     the only code that replaces anything in TensorFlow or Keras
- room.py       ``emulation()``, the switch with every patch; what the core calls
- variables.py  ``tf.compat.v1.get_variable``
- summaries.py  ``tf.summary.*``, ``tf.compat.v1.summary.*``, ``add_param_summary``
- summary_ops.py what a TF1 summary becomes in a tower: a tensor computed when written
- optimizers.py ``opt.minimize``, ``tf.control_dependencies`` between them
- train_optimizers.py ``tf.compat.v1.train.AdamOptimizer`` & co.: Keras optimizers running TF1's rules
- graph_collections.py ``tf.compat.v1.get_collection``, ``trainable_variables``, ``global_variables``
- recording.py  custom trainers that build their graph in ``__init__`` (GAN trainers)
- step_counter.py ``get_global_step_var``
- regularize.py ``regularize_cost``, ``l2_regularizer``, ``l1_regularizer``
- aliases.py    ``tfv1``, ``get_num_gpu``, ``KerasPhaseCallback``, ``DataParallelBuilder``
- variable_scopes.py ``auto_reuse_variable_scope``, ``under_variable_scope``
- legacy/       the older trainer API (tensorpack's 003 documents)
- layers/       tensorpack's layer functions (``Conv2D``, ``BatchNorm``, ``argscope``, ``LinearWrap``, ...)

Code outside the room reaches it only through this module's names.
"""
from .aliases import DataParallelBuilder, KerasPhaseCallback, get_num_gpu, tfv1
from .layers import (
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
                     argscope,
                     custom_getter_scope,
                     disable_layer_logging,
                     enable_argscope_for_function,
                     enable_argscope_for_module,
                     freeze_variables,
                     get_arg_scope,
                     layer_register,
                     remap_variables,
)
from .legacy import FeedfreeTrainerBase, SimpleFeedfreeTrainer, SingleCostFeedfreeTrainer, legacy_get_predictor
from .recording import GraphBuildError, GraphOp, minimize
from .regularize import l1_regularizer, l2_regularizer, regularize_cost
from .room import emulation, register
from .step_counter import get_global_step_var
from .summaries import add_param_summary
from .switch import TF1CallError
from .variable_scopes import auto_reuse_variable_scope, under_variable_scope

__all__ = [
    "emulation", "register", "TF1CallError", "minimize", "GraphOp", "GraphBuildError",
    "add_param_summary", "regularize_cost", "l2_regularizer", "l1_regularizer", "get_global_step_var",
    "tfv1", "get_num_gpu", "KerasPhaseCallback", "DataParallelBuilder",
    "auto_reuse_variable_scope", "under_variable_scope",
    "FeedfreeTrainerBase", "SingleCostFeedfreeTrainer", "SimpleFeedfreeTrainer", "legacy_get_predictor",
    # tensorpack.models' layer functions and tfutils' argscope / varreplace (layers/)
    "Conv2D", "Conv2DTranspose", "Deconv2D", "FullyConnected", "BatchNorm", "BatchRenorm", "LayerNorm", "InstanceNorm",
    "MaxPooling", "AvgPooling", "GlobalAvgPooling", "FixedUnPooling", "Dropout", "BNReLU", "PReLU", "Maxout",
    "ConcatWith", "LinearWrap", "layer_register", "VariableHolder", "disable_layer_logging", "argscope",
    "get_arg_scope", "enable_argscope_for_function", "enable_argscope_for_module", "custom_getter_scope",
    "remap_variables", "freeze_variables",
]
