"""tensorpack's TF1 world on TensorFlow 2: one room, active only while a tower is traced.

Each module is one TF1 concept (the package's README.md has the table of concepts,
modules and the tests that prove them):

- switch.py     the only code that replaces anything in TensorFlow or Keras
- room.py       ``emulation()``, the switch with every patch
- tower.py, model_desc.py, trainers.py  the core's classes overriding its hooks with the room
- feedfree.py   tensorpack 003's feedfree trainers
- eager.py      the trainers' entry points, eagerly also inside ``with tf.Graph().as_default():``
- variables.py  ``tf.compat.v1.get_variable``
- summaries.py  ``tf.summary.*``, ``tf.compat.v1.summary.*``, ``add_param_summary``, ``in_merged_collections``
- summary_ops.py what a TF1 summary becomes in a tower: a tensor computed when written
- optimizers.py ``opt.minimize``, ``tf.control_dependencies`` between them
- train_optimizers.py ``tf.compat.v1.train.AdamOptimizer`` & co.: Keras optimizers running TF1's rules
- graph_collections.py ``tf.compat.v1.get_collection``, ``trainable_variables``, ``global_variables``
- trainable.py  the model's variables as those collections list them (``model_variables``)
- recording.py  custom trainers that build their graph in ``__init__`` (GAN trainers): their towers
- recorded_ops.py  what such an ``__init__`` records besides: ``minimize``, ``tf.add_n``, the step
- step_counter.py ``get_global_step_var``
- regularize.py ``regularize_cost``, ``l2_regularizer``, ``l1_regularizer``
- aliases.py    ``get_num_gpu``, ``KerasPhaseCallback``
- keras_phase.py Keras's learning phase in a tower (``training=`` from the tower), ``layer.updates``
- keras_trainer.py ``KerasModel``, ``setup_keras_trainer`` (tensorpack's ``contrib.keras``)
- compat_v1.py  ``tfv1``: ``tf.compat.v1`` with TF1's ``tf.layers`` (``layers/tf_layers.py``), ``contrib`` and ``train``
- contrib.py    ``tfv1.contrib``: ``rnn``, ``layers``, ``slim`` (what the port command imports for ``tensorflow.contrib``)
- contrib_layers.py ``tf.contrib.layers`` / ``slim.layers``: ``conv2d``, ``fully_connected``, pools, initializers
- rnn_cells.py  ``tfv1.contrib.rnn``: TF1's LSTM cells and ``static_rnn``
- contrib_batch_norm.py ``slim.batch_norm`` (``tf.contrib.layers.batch_norm``) with TF1's defaults and names
- slim_arg_scope.py ``slim.arg_scope``, ``add_arg_scope``: defaults for slim's functions
- slim_nets/    ``tf.contrib.slim.nets``: slim's ``resnet_v1`` (50/101/152) and ``resnet_utils``
- gradient_overrides.py ``@tf.RegisterGradient`` in ``build_graph`` (a retraced tower keeps its first registration)
- input_producers.py ``tfv1.train.range_input_producer`` in an InputSource's tensors
- data_parallel.py ``DataParallelBuilder.call_for_each_tower`` (towers under this layer's TowerContext)
- variable_scopes.py ``auto_reuse_variable_scope``, ``under_variable_scope``
- legacy/       the older trainer API (tensorpack's 003 documents), tensorpack's ``TrainConfig``
- layers/       tensorpack's layer functions (``Conv2D``, ``BatchNorm``, ``argscope``, ``LinearWrap``, ...)

Code outside the room reaches it only through this module's names. Nothing here is
engaged at import: only these classes' hooks enter the room, in the thread that traces.
"""
from .aliases import KerasPhaseCallback, get_num_gpu
from .compat_v1 import tfv1
from .data_parallel import DataParallelBuilder
from .distributed_trainers import DistributedTrainerParameterServer, DistributedTrainerReplicated, HorovodTrainer
from .feedfree import FeedfreeTrainerBase, SimpleFeedfreeTrainer, SingleCostFeedfreeTrainer
from .input_producers import producing_for
from .keras_trainer import KerasModel, setup_keras_trainer
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
from .legacy import AutoResumeTrainConfig, TrainConfig, legacy_get_predictor
from .model_desc import ModelDesc, ModelDescBase
from .recorded_ops import GraphOp, minimize
from .recording import GraphBuildError
from .regularize import l1_regularizer, l2_regularizer, regularize_cost
from .room import emulation
from .step_counter import get_global_step_var, last_trainer
from .summaries import add_param_summary, in_merged_collections
from .switch import TF1CallError
from .tower import TowerContext, TowerFunc
from .train_optimizers import apply_grad_processors
from .trainable import variables_of as model_variables
from .trainers import (
                     AsyncMultiGPUTrainer,
                     MultiGPUTrainerBase,
                     NoOpTrainer,
                     QueueInputTrainer,
                     SimpleTrainer,
                     SingleCostTrainer,
                     SyncMultiGPUTrainer,
                     SyncMultiGPUTrainerParameterServer,
                     SyncMultiGPUTrainerReplicated,
                     TF1Trainer,
                     TowerTrainer,
)
from .variable_scopes import auto_reuse_variable_scope, under_variable_scope

__all__ = [
    "emulation", "TF1CallError",
    # the core's classes with the room's overrides of their hooks
    "TowerContext", "TowerFunc", "ModelDescBase", "ModelDesc", "TF1Trainer", "TowerTrainer", "SingleCostTrainer",
    "SimpleTrainer", "QueueInputTrainer", "NoOpTrainer", "MultiGPUTrainerBase", "SyncMultiGPUTrainerReplicated",
    "SyncMultiGPUTrainerParameterServer", "SyncMultiGPUTrainer", "AsyncMultiGPUTrainer", "apply_grad_processors",
    "HorovodTrainer", "DistributedTrainerReplicated", "DistributedTrainerParameterServer", "minimize", "GraphOp", "GraphBuildError",
    "add_param_summary", "in_merged_collections", "regularize_cost", "l2_regularizer", "l1_regularizer", "get_global_step_var", "last_trainer",
    "tfv1", "get_num_gpu", "KerasPhaseCallback", "KerasModel", "setup_keras_trainer", "DataParallelBuilder",
    "auto_reuse_variable_scope", "under_variable_scope", "producing_for", "model_variables",
    "FeedfreeTrainerBase", "SingleCostFeedfreeTrainer", "SimpleFeedfreeTrainer", "legacy_get_predictor",
    "TrainConfig", "AutoResumeTrainConfig",
    # tensorpack.models' layer functions and tfutils' argscope / varreplace (layers/)
    "Conv2D", "Conv2DTranspose", "Deconv2D", "FullyConnected", "BatchNorm", "BatchRenorm", "LayerNorm", "InstanceNorm",
    "MaxPooling", "AvgPooling", "GlobalAvgPooling", "FixedUnPooling", "Dropout", "BNReLU", "PReLU", "Maxout",
    "ConcatWith", "LinearWrap", "layer_register", "VariableHolder", "disable_layer_logging", "argscope",
    "get_arg_scope", "enable_argscope_for_function", "enable_argscope_for_module", "custom_getter_scope",
    "remap_variables", "freeze_variables",
]
