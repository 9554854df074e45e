"""tensorpack 0.11's ``tensorpack.callbacks.graph``: its names from ``trainstack.callbacks`` (stand-ins for
``DumpTensorAsImage``, ``DumpParamAsImage``, listed in ``_replaced``)."""
from trainstack.callbacks import CheckNumerics, DumpTensor, DumpTensors, ProcessTensors, RunOp, RunUpdateOps

from .._replaced import stand_in_names, unprovided

__all__ = ["RunOp", "RunUpdateOps", "ProcessTensors", "DumpTensors", "DumpTensor", "CheckNumerics"] + stand_in_names(__name__)

__getattr__ = unprovided(__name__)
