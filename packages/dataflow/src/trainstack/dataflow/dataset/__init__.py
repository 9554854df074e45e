"""trainstack.dataflow.dataset: tensorpack's dataset readers, reading the same files from the same place.

Data live under ``$TRAINSTACK_DATASET``, else ``$TENSORPACK_DATASET``, else ``~/tensorpack_data``,
in tensorpack's sub-directory names; a missing file is downloaded (progress bar, checksum) or
named in a :class:`DatasetNotFoundError`. OpenCV and scipy are imported only by the readers
that need them, when they are built.
"""
from .bsds500 import BSDS500
from .cifar import Cifar10, Cifar100, CifarBase
from .dataset_path import get_dataset_path
from .downloads import ChecksumError, DatasetNotFoundError, RemoteFile, download
from .ilsvrc import ILSVRC12, ILSVRC12Files, ILSVRCMeta
from .mnist import FashionMnist, Mnist
from .svhn import SVHNDigit

__all__ = ["Mnist", "FashionMnist", "CifarBase", "Cifar10", "Cifar100", "SVHNDigit",
           "ILSVRCMeta", "ILSVRC12Files", "ILSVRC12", "BSDS500",
           "get_dataset_path", "download", "RemoteFile", "DatasetNotFoundError", "ChecksumError"]
