"""tensorpack 0.11's ``tensorpack.callbacks.base``: its names from ``trainstack.callbacks``,
``trainstack.loop``."""
from trainstack.callbacks import CallbackFactory, ProxyCallback
from trainstack.loop import Callback

from .._replaced import unprovided

__all__ = ["Callback", "ProxyCallback", "CallbackFactory"]

__getattr__ = unprovided(__name__)
