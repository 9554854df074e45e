"""tensorpack 0.11's ``tensorpack.callbacks.param``: its names from ``trainstack.callbacks``."""
from trainstack.callbacks import (
    GraphVarParam,
    HumanHyperParamSetter,
    HyperParam,
    HyperParamSetter,
    HyperParamSetterWithFunc,
    ObjAttrParam,
    ScheduledHyperParamSetter,
    StatMonitorParamSetter,
)

from .._replaced import unprovided

__all__ = ["HyperParam", "GraphVarParam", "ObjAttrParam", "HyperParamSetter", "HumanHyperParamSetter", "ScheduledHyperParamSetter", "StatMonitorParamSetter", "HyperParamSetterWithFunc"]

__getattr__ = unprovided(__name__)
