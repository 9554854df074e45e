"""tensorpack 0.11's ``tensorpack.input_source.input_source_base``: its names from ``trainstack.inputs``
(stand-ins for ``remap_input_source``, listed in ``_replaced``)."""
from trainstack.inputs import InputSource

from .._replaced import stand_in_names, unprovided

__all__ = ["InputSource"] + stand_in_names(__name__)

__getattr__ = unprovided(__name__)
