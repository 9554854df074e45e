"""tensorpack 0.11's ``tensorpack.predict``: its names from ``trainstack.towers``."""
from trainstack.towers import (
    DatasetPredictorBase,
    OfflinePredictor,
    OnlinePredictor,
    PredictConfig,
    SimpleDatasetPredictor,
)

from .._replaced import unprovided

__all__ = ["OnlinePredictor", "OfflinePredictor", "PredictConfig", "DatasetPredictorBase", "SimpleDatasetPredictor"]

__getattr__ = unprovided(__name__)
