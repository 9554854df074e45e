"""tensorpack 0.11's ``tensorpack.tfutils.varreplace``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import custom_getter_scope, freeze_variables, remap_variables

from .._replaced import unprovided

__all__ = ["custom_getter_scope", "freeze_variables", "remap_variables"]

__getattr__ = unprovided(__name__)
