"""tensorpack 0.11's ``tensorpack.dataflow.dataset.ilsvrc``: its names from ``trainstack.dataflow.dataset``
(stand-ins for ``TinyImageNet``, listed in ``_replaced``)."""
from trainstack.dataflow.dataset import ILSVRC12, ILSVRC12Files, ILSVRCMeta

from ..._replaced import stand_in_names, unprovided

__all__ = ["ILSVRCMeta", "ILSVRC12", "ILSVRC12Files"] + stand_in_names(__name__)

__getattr__ = unprovided(__name__)
