"""tensorpack 0.11's ``tensorpack.predict``: its names from ``trainstack.towers``, and this layer's ``FeedfreePredictor``."""
from trainstack.towers import (
    DatasetPredictorBase,
    OfflinePredictor,
    OnlinePredictor,
    PredictConfig,
    SimpleDatasetPredictor,
)

from .._replaced import stand_in_names, unprovided
from .feedfree import FeedfreePredictor

__all__ = ["OnlinePredictor", "OfflinePredictor", "PredictConfig", "DatasetPredictorBase", "SimpleDatasetPredictor",
           "FeedfreePredictor"]

__all__ += stand_in_names(__name__)

__getattr__ = unprovided(__name__)
