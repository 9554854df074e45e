"""What a TF1 session was set up with: runtime settings, devices, variable initializers.

Beside :mod:`trainstack.towers.tower` at the bottom of trainstack.towers (tensorpack's
``tfutils/sessinit.py``, ``tfutils/sesscreate.py``): RuntimeConfig replaces the
session's ConfigProto, SessionInit restores variables, devices names the towers' devices.
"""
from typing import TYPE_CHECKING

from trainstack.loop.lazy_exports import lazy_exports

if TYPE_CHECKING:  # the public names; each is imported on its first use (see lazy_exports)
    from .checkpoint_init import CheckpointInit, SaverRestore, SaverRestoreRelaxed
    from .devices import logical_cpu_devices, resolve_devices
    from .dict_restore import DictRestore
    from .runtime import RuntimeConfig, reject_session_args
    from .sessinit import ChainInit, InitReport, JustCurrentSession, ResumeError, SessionInit
    from .smart_init import SmartInit, get_model_loader

__all__ = [
    "RuntimeConfig", "reject_session_args", "resolve_devices", "logical_cpu_devices", "SessionInit",
    "JustCurrentSession", "CheckpointInit", "SaverRestore", "SaverRestoreRelaxed", "DictRestore",
    "ChainInit", "SmartInit", "get_model_loader", "InitReport", "ResumeError",
]

__getattr__, __dir__ = lazy_exports(__name__)
