"""tensorpack 0.11's ``tensorpack.tfutils.tower``: its names from ``trainstack.towers`` and
``trainstack.tensorpack.tf1`` (TowerContext, TowerFunc: the core's, building towers in the TF1 room).
tensorpack's older names are the same classes: ``BaseTowerContext`` is the core's ``TowerContext`` (the
base of every tower context), ``TowerFuncWrapper`` is ``TowerFunc``, ``TowerTensorHandle(s)`` are
``TowerHandle(s)``."""
from trainstack.tensorpack.tf1 import TowerContext, TowerFunc
from trainstack.towers import TowerContext as BaseTowerContext
from trainstack.towers import TowerHandle as TowerTensorHandle
from trainstack.towers import TowerHandles as TowerTensorHandles
from trainstack.towers import get_current_tower_context

from .._replaced import unprovided

TowerFuncWrapper = TowerFunc

__all__ = ["get_current_tower_context", "BaseTowerContext", "TowerContext", "TowerFuncWrapper", "TowerFunc",
           "TowerTensorHandle", "TowerTensorHandles"]

__getattr__ = unprovided(__name__)
