"""tensorpack 0.11's ``tensorpack.tfutils.summary``.

Its names come from ``trainstack.callbacks``, ``trainstack.tensorpack.tf1``.
"""
from trainstack.callbacks import add_moving_summary, add_tensor_summary
from trainstack.tensorpack.tf1 import add_param_summary

from .._replaced import unprovided

__all__ = ["add_tensor_summary", "add_param_summary", "add_moving_summary"]

__getattr__ = unprovided(__name__)
