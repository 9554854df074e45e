"""tensorpack 0.11's ``tensorpack.callbacks.monitor``: its names from ``trainstack.callbacks``,
``trainstack.loop`` (stand-ins for ``SendMonitorData``, ``CometMLMonitor``, listed in ``_replaced``)."""
from trainstack.callbacks import JSONWriter, ScalarPrinter, TFEventWriter
from trainstack.loop import MonitorBase, Monitors

from .._replaced import stand_in_names, unprovided

__all__ = ["MonitorBase", "Monitors", "TFEventWriter", "JSONWriter", "ScalarPrinter"] + stand_in_names(__name__)

__getattr__ = unprovided(__name__)
