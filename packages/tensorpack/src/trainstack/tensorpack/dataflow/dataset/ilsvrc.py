"""tensorpack 0.11's ``tensorpack.dataflow.dataset.ilsvrc``: its names from ``trainstack.dataflow.dataset``,
and ``TinyImageNet`` of this layer."""
from trainstack.dataflow.dataset import ILSVRC12, ILSVRC12Files, ILSVRCMeta

from ..._replaced import stand_in_names, unprovided
from .tiny_imagenet import TinyImageNet

__all__ = ["ILSVRCMeta", "ILSVRC12", "ILSVRC12Files", "TinyImageNet"] + stand_in_names(__name__)

__getattr__ = unprovided(__name__)
