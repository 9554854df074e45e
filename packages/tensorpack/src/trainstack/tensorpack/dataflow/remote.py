"""tensorpack 0.11's ``tensorpack.dataflow.remote``: its names from ``trainstack.dataflow``."""
from trainstack.dataflow import RemoteDataZMQ, send_dataflow_zmq

from .._replaced import unprovided

__all__ = ["send_dataflow_zmq", "RemoteDataZMQ"]

__getattr__ = unprovided(__name__)
