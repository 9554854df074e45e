"""Inference: predictors, inferencers and InferenceRunner, offline prediction, SavedModel export.

Built from a TowerFunc alone (tensorpack's ``predict/`` and ``callbacks/inference*``);
the trainers build their online predictors from here.
"""
from typing import TYPE_CHECKING

from trainstack.loop.lazy_exports import lazy_exports

if TYPE_CHECKING:  # the public names; each is imported on its first use (see lazy_exports)
    from .data_parallel_inference import DataParallelInferenceRunner
    from .dataset_predictor import DatasetPredictorBase, SimpleDatasetPredictor
    from .export import ModelExporter, export_saved_model
    from .inference import BinaryClassificationStats, ClassificationError, Inferencer, ScalarStats
    from .inference_runner import InferenceRunner
    from .predict_config import OfflinePredictor, PredictConfig
    from .predictor import OnlinePredictor

__all__ = [
    "OnlinePredictor", "Inferencer", "ScalarStats", "ClassificationError", "BinaryClassificationStats",
    "InferenceRunner", "DataParallelInferenceRunner", "PredictConfig", "OfflinePredictor",
    "ModelExporter", "export_saved_model", "SimpleDatasetPredictor", "DatasetPredictorBase",
]

__getattr__, __dir__ = lazy_exports(__name__)
