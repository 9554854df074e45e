"""tensorpack 0.11's ``tensorpack.tfutils``: its names from ``trainstack.towers``, ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import (
    TowerContext,
    argscope,
    enable_argscope_for_function,
    enable_argscope_for_module,
    get_arg_scope,
    get_global_step_var,
)
from trainstack.towers import get_current_tower_context

from .._replaced import stand_in_names, unprovided
from . import gradproc, optimizer, sesscreate, sessinit, summary, tower, varreplace
from .common import collect_env_info, get_global_step_value, get_tf_version_tuple
from .sessinit import (
    ChainInit,
    DictRestore,
    JustCurrentSession,
    SaverRestore,
    SaverRestoreRelaxed,
    SessionInit,
    SmartInit,
    get_model_loader,
)

__all__ = [
    "get_current_tower_context", "TowerContext", "get_global_step_var", "get_global_step_value", "get_tf_version_tuple",
    "collect_env_info", "SessionInit",
    "ChainInit", "SaverRestore", "SaverRestoreRelaxed", "DictRestore", "JustCurrentSession", "get_model_loader",
    "SmartInit", "argscope", "get_arg_scope", "enable_argscope_for_module", "enable_argscope_for_function",
    "sessinit", "summary", "optimizer", "sesscreate", "gradproc", "varreplace", "tower"
]

__all__ += stand_in_names(__name__)

__getattr__ = unprovided(__name__)
