"""tensorpack 0.11's ``tensorpack.callbacks.hooks``: stand-ins for ``CallbackToHook``, ``HookToCallback``,
``TFLocalCLIDebugHook``, listed in ``_replaced``."""

from .._replaced import stand_in_names, unprovided

__all__ = stand_in_names(__name__)

__getattr__ = unprovided(__name__)
