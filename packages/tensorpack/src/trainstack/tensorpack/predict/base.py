"""tensorpack 0.11's ``tensorpack.predict.base``: its names from ``trainstack.towers`` (stand-ins for
``PredictorBase``, listed in ``_replaced``)."""
from trainstack.towers import OfflinePredictor, OnlinePredictor

from .._replaced import stand_in_names, unprovided

__all__ = ["OnlinePredictor", "OfflinePredictor"] + stand_in_names(__name__)

__getattr__ = unprovided(__name__)
