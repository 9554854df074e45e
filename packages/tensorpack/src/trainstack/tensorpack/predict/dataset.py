"""tensorpack 0.11's ``tensorpack.predict.dataset``: its names from ``trainstack.towers`` (stand-ins for
``MultiProcessDatasetPredictor``, listed in ``_replaced``)."""
from trainstack.towers import DatasetPredictorBase, SimpleDatasetPredictor

from .._replaced import stand_in_names, unprovided

__all__ = ["DatasetPredictorBase", "SimpleDatasetPredictor"] + stand_in_names(__name__)

__getattr__ = unprovided(__name__)
