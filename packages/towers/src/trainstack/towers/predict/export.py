"""Export a model's inference tower as a SavedModel, servable without trainstack.

::

    config = PredictConfig(model=Model(), input_names=["image"], output_names=["prob"],
                           session_init="train_log/mnist")
    ModelExporter(config).export_serving("export/mnist")

    # anywhere with TensorFlow (TF Serving, saved_model_cli, another program):
    serve = tf.saved_model.load("export/mnist").signatures["serving_default"]
    prob = serve(image=images)["prob"]

The exported function is the one an :class:`~trainstack.towers.OfflinePredictor`
of the same config runs (the tower built in inference mode, variables set by
``session_init``), as a ``tf.function`` signature taking the ``input_names`` as
keyword arguments and returning a dict keyed by ``output_names``. The SavedModel
holds the model's variables and the traced graph only: loading it imports no
trainstack code.

tensorpack's other format, one ``GraphDef`` file with the variables frozen to constants
(``export_compact``), is ``trainstack.tensorpack.tfutils.export.ModelExporter``'s.
"""
from __future__ import annotations

import logging
import os

import tensorflow as tf

from .predict_config import OfflinePredictor, PredictConfig

__all__ = ["ModelExporter", "export_saved_model"]

logger = logging.getLogger("trainstack.towers")

#: The signature TF Serving and ``saved_model_cli`` use when none is named.
DEFAULT_SIGNATURE = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY


class _Servable(tf.Module):
    """What is saved: the model (its variables) and the serving function."""

    def __init__(self, predictor: OfflinePredictor) -> None:
        super().__init__(name="servable")
        self.model = predictor.checkpoint_objects["model"]
        predict = predictor.tf_function
        output_names = list(predictor.output_names)

        def serve(*inputs: tf.Tensor) -> dict[str, tf.Tensor]:
            return dict(zip(output_names, predict(*inputs)))

        self.serve = tf.function(serve, input_signature=list(predictor.input_signature), autograph=False)


class ModelExporter:
    """Export the inference tower of a :class:`PredictConfig` (tensorpack's ``ModelExporter``)."""

    def __init__(self, config: PredictConfig) -> None:
        if not isinstance(config, PredictConfig):
            raise TypeError(f"ModelExporter takes a PredictConfig, got {config!r}")
        self.config = config

    def export_serving(self, filename: str | os.PathLike, *, signature_name: str = DEFAULT_SIGNATURE) -> str:
        """Write a SavedModel to directory ``filename``; return its path.

        One signature, ``signature_name`` (default ``"serving_default"``; tensorpack
        named it ``"prediction_pipeline"``): keyword inputs named by the config's
        ``input_names``, a dict of outputs keyed by its ``output_names``. (tensorpack's
        ``tags`` argument is ``trainstack.tensorpack``'s ModelExporter's.)
        """
        if not isinstance(signature_name, str) or not signature_name:
            raise TypeError(f"export_serving(signature_name=...) must be a non-empty string, "
                            f"got {signature_name!r}")
        if not self.config.input_names:
            raise ValueError("export_serving needs at least one input in PredictConfig(input_names=...): "
                             "a serving signature takes its inputs as named tensors")
        path = os.fspath(filename)
        servable = _Servable(OfflinePredictor(self.config))
        tf.saved_model.save(servable, path, signatures={signature_name: servable.serve})
        logger.info("SavedModel written to %s (signature %r: %s -> %s).", path, signature_name,
                    self.config.input_names, self.config.output_names)
        return path


def export_saved_model(config: PredictConfig, path: str | os.PathLike,
                       signature_name: str = DEFAULT_SIGNATURE) -> str:
    """``ModelExporter(config).export_serving(path, signature_name=...)``."""
    return ModelExporter(config).export_serving(path, signature_name=signature_name)

