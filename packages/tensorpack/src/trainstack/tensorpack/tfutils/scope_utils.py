"""tensorpack 0.11's ``tensorpack.tfutils.scope_utils``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import auto_reuse_variable_scope

from .._replaced import unprovided

__all__ = ["auto_reuse_variable_scope"]

__getattr__ = unprovided(__name__)
