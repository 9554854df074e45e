"""tensorpack's TF1 world on TensorFlow 2: one room, active only while a tower is traced.

Each module is one TF1 concept (see README.md for the table of concepts,
modules and the tests that prove them):

- switch.py     the only code that replaces anything in TensorFlow or Keras
- room.py       ``emulation()``, the switch with every patch; what the core calls
- variables.py  ``tf.compat.v1.get_variable``
- summaries.py  ``tf.summary.*``, ``tf.compat.v1.summary.*``, ``add_param_summary``
- optimizers.py ``opt.minimize``, ``tf.control_dependencies`` between them
- recording.py  custom trainers that build their graph in ``__init__`` (GAN trainers)
- step_counter.py ``get_global_step_var``
- regularize.py ``regularize_cost``, ``l2_regularizer``, ``l1_regularizer``
- aliases.py    ``tfv1``, ``get_num_gpu``, ``KerasPhaseCallback``, ``DataParallelBuilder``
- legacy/       the older trainer API (tensorpack's 003 documents)

Code outside the room reaches it only through this module's names.
"""
from .switch import TF1CallError
from .recording import GraphBuildError, GraphOp, minimize
from .summaries import add_param_summary
from .regularize import l1_regularizer, l2_regularizer, regularize_cost
from .step_counter import get_global_step_var
from .aliases import DataParallelBuilder, KerasPhaseCallback, get_num_gpu, tfv1
from .legacy import FeedfreeTrainerBase, SimpleFeedfreeTrainer, SingleCostFeedfreeTrainer, legacy_get_predictor
from .room import emulation, register

__all__ = [
    "emulation", "register", "TF1CallError", "minimize", "GraphOp", "GraphBuildError",
    "add_param_summary", "regularize_cost", "l2_regularizer", "l1_regularizer", "get_global_step_var",
    "tfv1", "get_num_gpu", "KerasPhaseCallback", "DataParallelBuilder",
    "FeedfreeTrainerBase", "SingleCostFeedfreeTrainer", "SimpleFeedfreeTrainer", "legacy_get_predictor",
]
