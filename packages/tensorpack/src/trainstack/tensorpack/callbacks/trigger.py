"""tensorpack 0.11's ``tensorpack.callbacks.trigger``: its names from ``trainstack.callbacks``."""
from trainstack.callbacks import EnableCallbackIf, PeriodicCallback, PeriodicTrigger

from .._replaced import unprovided

__all__ = ["PeriodicTrigger", "PeriodicCallback", "EnableCallbackIf"]

__getattr__ = unprovided(__name__)
