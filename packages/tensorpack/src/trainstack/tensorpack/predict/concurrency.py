"""tensorpack 0.11's ``tensorpack.predict.concurrency``: stand-ins for ``MultiThreadAsyncPredictor``, listed
in ``_replaced``."""

from .._replaced import stand_in_names, unprovided

__all__ = stand_in_names(__name__)

__getattr__ = unprovided(__name__)
