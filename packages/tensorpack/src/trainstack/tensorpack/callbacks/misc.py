"""tensorpack 0.11's ``tensorpack.callbacks.misc``: its names from ``trainstack.callbacks`` (stand-ins for
``SendStat``, ``InjectShell``, listed in ``_replaced``)."""
from trainstack.callbacks import EstimatedTimeLeft

from .._replaced import stand_in_names, unprovided

__all__ = ["EstimatedTimeLeft"] + stand_in_names(__name__)

__getattr__ = unprovided(__name__)
