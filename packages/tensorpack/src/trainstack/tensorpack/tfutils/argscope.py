"""tensorpack 0.11's ``tensorpack.tfutils.argscope``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import argscope, enable_argscope_for_function, enable_argscope_for_module, get_arg_scope

from .._replaced import unprovided

__all__ = ["argscope", "get_arg_scope", "enable_argscope_for_module", "enable_argscope_for_function"]

__getattr__ = unprovided(__name__)
