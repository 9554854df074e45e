"""tensorpack 0.11's ``tensorpack.models.common``: its names from ``trainstack.tensorpack.tf1`` (stand-ins for
``rename_tflayer_get_variable``, listed in ``_replaced``)."""
from trainstack.tensorpack.tf1 import VariableHolder, disable_layer_logging, layer_register

from .._replaced import stand_in_names, unprovided

__all__ = ["layer_register", "VariableHolder", "disable_layer_logging"] + stand_in_names(__name__)

__getattr__ = unprovided(__name__)
