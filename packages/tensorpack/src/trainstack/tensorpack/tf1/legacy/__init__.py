"""The older trainer API (tensorpack's 003 documents), a layer on top of the current one.

The tensorpack layer's trainers (:mod:`..trainers`) take the older forms through it.
"""
from .compat import legacy_get_predictor

__all__ = ["legacy_get_predictor"]
