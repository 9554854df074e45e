"""The older trainer API (tensorpack's 003 documents), a layer on top of the current one.

Nothing in the current API imports it; importing it (``import trainstack.towers``
does) registers the older forms with the trainers (see
:mod:`trainstack.towers.trainers.legacy_hook`).
"""
from . import dispatch as _dispatch
from .compat import FeedfreeTrainerBase, SimpleFeedfreeTrainer, SingleCostFeedfreeTrainer, legacy_get_predictor

_dispatch.register()

__all__ = ["FeedfreeTrainerBase", "SingleCostFeedfreeTrainer", "SimpleFeedfreeTrainer", "legacy_get_predictor"]
