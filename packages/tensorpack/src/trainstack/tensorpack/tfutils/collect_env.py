"""tensorpack 0.11's ``tensorpack.tfutils.collect_env``: a table describing the environment."""
from __future__ import annotations

import os
import sys
from collections import OrderedDict
from typing import Any

import numpy as np
import tensorflow as tf

from .._replaced import unprovided

__all__ = ["parse_TF_build_info", "collect_env_info"]


def parse_TF_build_info() -> OrderedDict[str, Any]:  # noqa: N802 - tensorpack's name
    """CUDA, cuDNN and compute capabilities TensorFlow was built with (``tf.sysconfig.get_build_info()``),
    under tensorpack's keys; empty for a CPU build."""
    ret: OrderedDict[str, Any] = OrderedDict()
    info = tf.sysconfig.get_build_info()
    if "cuda_version" in info:
        ret["TF built with CUDA"] = info["cuda_version"]
    if "cudnn_version" in info:
        ret["TF built with CUDNN"] = info["cudnn_version"]
    if "cuda_compute_capabilities" in info:
        ret["TF compute capabilities"] = ",".join(k.replace("compute_", "") for k in info["cuda_compute_capabilities"])
    return ret


def collect_env_info() -> str:
    """A two-column table (one ``key  value`` line each) of the platform, Python, trainstack, NumPy,
    TensorFlow (version, CUDA support and build), ``CUDA_VISIBLE_DEVICES`` and the GPUs TensorFlow sees."""
    from trainstack.tensorpack import __file__ as tensorpack_file  # noqa: PLC0415
    from trainstack.tensorpack._version import __version__  # noqa: PLC0415

    data: list[tuple[str, Any]] = [
        ("sys.platform", sys.platform),
        ("Python", sys.version.replace("\n", "")),
        ("trainstack.tensorpack", f"{__version__} @{os.path.dirname(tensorpack_file)}"),
        ("Numpy", np.__version__),
        ("TensorFlow", f"{tf.__version__}/{tf.version.GIT_VERSION} @{os.path.dirname(tf.__file__)}"),
        ("TF Compiler Version", tf.version.COMPILER_VERSION),
        ("TF CUDA support", tf.test.is_built_with_cuda()),
        *parse_TF_build_info().items(),
        ("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES", "Unspecified")),
        ("GPUs seen by TensorFlow", len(tf.config.list_physical_devices("GPU"))),
    ]
    width = max(len(k) for k, _ in data)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in data)


__getattr__ = unprovided(__name__)
