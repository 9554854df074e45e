"""tensorpack 0.11's ``tensorpack.dataflow.base``: its names from ``trainstack.dataflow``."""
from trainstack.dataflow import DataFlow, DataFlowTerminated, ProxyDataFlow, RNGDataFlow

from .._replaced import unprovided

__all__ = ["DataFlow", "ProxyDataFlow", "RNGDataFlow", "DataFlowTerminated"]

__getattr__ = unprovided(__name__)
