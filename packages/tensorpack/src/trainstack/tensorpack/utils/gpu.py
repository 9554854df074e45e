"""tensorpack 0.11's ``tensorpack.utils.gpu`` (``get_num_gpu``: ``trainstack.tensorpack.tf1``'s)."""
from __future__ import annotations

from contextlib import AbstractContextManager

from trainstack.tensorpack.tf1 import get_num_gpu
from trainstack.tensorpack.tf1 import get_num_gpu as get_nr_gpu

from .._replaced import unprovided
from .utils import change_env

__all__ = ["change_gpu", "get_nr_gpu", "get_num_gpu"]


def change_gpu(val: int | str) -> AbstractContextManager[None]:
    """A block where ``CUDA_VISIBLE_DEVICES`` is ``val`` (``-1``: no GPU, the empty string)."""
    val = str(val)
    if val == "-1":
        val = ""
    return change_env("CUDA_VISIBLE_DEVICES", val)


__getattr__ = unprovided(__name__)
