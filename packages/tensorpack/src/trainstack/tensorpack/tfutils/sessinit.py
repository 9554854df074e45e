"""tensorpack 0.11's ``tensorpack.tfutils.sessinit``: its names from ``trainstack.towers``."""
from trainstack.towers import (
    ChainInit,
    DictRestore,
    JustCurrentSession,
    SaverRestore,
    SaverRestoreRelaxed,
    SessionInit,
    SmartInit,
    get_model_loader,
)

from .._replaced import unprovided

__all__ = [
    "SessionInit", "ChainInit", "SaverRestore", "SaverRestoreRelaxed", "DictRestore", "JustCurrentSession",
    "get_model_loader", "SmartInit"
]

__getattr__ = unprovided(__name__)
