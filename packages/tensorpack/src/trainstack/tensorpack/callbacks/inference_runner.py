"""tensorpack 0.11's ``tensorpack.callbacks.inference_runner``: its names from ``trainstack.towers`` (stand-
ins for ``InferenceRunnerBase``, listed in ``_replaced``)."""
from trainstack.towers import DataParallelInferenceRunner, InferenceRunner

from .._replaced import stand_in_names, unprovided

__all__ = ["InferenceRunner", "DataParallelInferenceRunner"] + stand_in_names(__name__)

__getattr__ = unprovided(__name__)
