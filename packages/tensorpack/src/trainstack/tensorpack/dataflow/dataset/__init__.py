"""tensorpack 0.11's ``tensorpack.dataflow.dataset``: its names from ``trainstack.dataflow.dataset``, and
``TinyImageNet``, ``Places365Standard`` and ``Caltech101Silhouettes`` of this layer."""
from trainstack.dataflow.dataset import (
    BSDS500,
    ILSVRC12,
    Cifar10,
    Cifar100,
    CifarBase,
    FashionMnist,
    ILSVRC12Files,
    ILSVRCMeta,
    Mnist,
    SVHNDigit,
)

from ..._replaced import stand_in_names, unprovided
from .caltech101 import Caltech101Silhouettes
from .ilsvrc import TinyImageNet
from .places import Places365Standard

__all__ = [
    "BSDS500", "CifarBase", "Cifar10", "Cifar100", "ILSVRCMeta", "ILSVRC12", "ILSVRC12Files", "Mnist",
    "FashionMnist", "SVHNDigit", "Caltech101Silhouettes", "TinyImageNet", "Places365Standard"
]

__all__ += stand_in_names(__name__)

__getattr__ = unprovided(__name__)
