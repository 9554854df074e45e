"""The older trainer API (tensorpack's 003 documents), a layer on top of the current one.

Nothing in the current API imports it; the TF1 room registers the older forms
with the trainers (``dispatch.register``, called by ``tf1.register()``; see
:mod:`trainstack.towers.trainers.legacy_hook`).
"""
from .compat import FeedfreeTrainerBase, SimpleFeedfreeTrainer, SingleCostFeedfreeTrainer, legacy_get_predictor

__all__ = ["FeedfreeTrainerBase", "SingleCostFeedfreeTrainer", "SimpleFeedfreeTrainer", "legacy_get_predictor"]
