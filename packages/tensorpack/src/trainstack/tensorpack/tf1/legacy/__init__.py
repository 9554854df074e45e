"""The older trainer API (tensorpack's 003 documents), a layer on top of the current one.

The tensorpack layer's trainers (:mod:`..trainers`) take the older forms through it; its
``TrainConfig`` (:mod:`.config`) takes the older form's tower arguments.
"""
from .compat import legacy_get_predictor
from .config import AutoResumeTrainConfig, TrainConfig

__all__ = ["legacy_get_predictor", "TrainConfig", "AutoResumeTrainConfig"]
