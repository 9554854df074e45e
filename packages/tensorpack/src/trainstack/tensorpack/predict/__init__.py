"""tensorpack 0.11's ``tensorpack.predict``: its names from ``trainstack.towers`` and this package's
``base`` (``PredictorBase``), ``config``, ``dataset``, ``feedfree`` (``FeedfreePredictor``), ``concurrency`` and ``multigpu``."""
from trainstack.towers import OfflinePredictor, OnlinePredictor

from .._replaced import stand_in_names, unprovided
from .base import PredictorBase
from .concurrency import MultiThreadAsyncPredictor
from .config import PredictConfig
from .dataset import DatasetPredictorBase, MultiProcessDatasetPredictor, SimpleDatasetPredictor
from .feedfree import FeedfreePredictor
from .multigpu import DataParallelOfflinePredictor, MultiTowerOfflinePredictor

__all__ = ["PredictorBase", "OnlinePredictor", "OfflinePredictor", "PredictConfig", "DatasetPredictorBase",
           "SimpleDatasetPredictor", "FeedfreePredictor", "MultiThreadAsyncPredictor", "MultiTowerOfflinePredictor",
           "DataParallelOfflinePredictor", "MultiProcessDatasetPredictor"]

__all__ += stand_in_names(__name__)

__getattr__ = unprovided(__name__)
