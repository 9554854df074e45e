"""tensorpack 0.11's ``tensorpack.tfutils.export``: the core's ModelExporter (``trainstack.towers``), with
tensorpack's compact export, a frozen ``GraphDef``."""
from __future__ import annotations

import logging
import os
from collections.abc import Sequence

import tensorflow as tf

from trainstack.callbacks import tf_private
from trainstack.towers import ModelExporter as CoreModelExporter
from trainstack.towers import OfflinePredictor

from .._replaced import unprovided

__all__ = ["ModelExporter"]

logger = logging.getLogger("trainstack.tensorpack")


class ModelExporter(CoreModelExporter):
    """tensorpack's ModelExporter: the core's :class:`~trainstack.towers.ModelExporter`
    (``export_serving``, a SavedModel, with tensorpack's ``tags``), and :meth:`export_compact`,
    tensorpack's other format."""

    def export_serving(self, filename: str | os.PathLike, tags: Sequence[str] | None = None,
                       signature_name: str = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY) -> str:
        """The core's ``export_serving(filename, signature_name)``, with tensorpack's ``tags``:
        TensorFlow 2 always writes the ``"serve"`` tag, so only ``None`` or ``["serve"]`` are accepted."""
        if tags is not None and list(tags) != [tf.saved_model.SERVING]:
            raise ValueError(f"export_serving(tags={tags!r}): TensorFlow 2's tf.saved_model.save always "
                             f"writes the single tag {tf.saved_model.SERVING!r}; pass tags=None")
        return super().export_serving(filename, signature_name=signature_name)

    def export_compact(self, filename: str | os.PathLike, optimize: bool = True,
                       toco_compatible: bool = False) -> str:
        """Write the inference graph with its variables frozen to constants, as one binary
        ``GraphDef`` file (tensorpack's compact export); return its path.

        Its placeholders are named by the config's ``input_names`` and its outputs by its
        ``output_names`` (tensor ``"<name>:0"``); TensorFlow 2 runs it with its own API
        ``tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(graph_def, name=""),
        []).prune(["x:0"], ["prob:0"])``. ``optimize`` runs TensorFlow's
        ``optimize_for_inference`` on it (``toco_compatible`` is passed there). Prefer
        :meth:`export_serving`: a SavedModel is what TensorFlow 2 tools load.
        """
        if toco_compatible and not optimize:
            raise ValueError("export_compact(toco_compatible=True) only applies with optimize=True")
        if not self.config.input_names:
            raise ValueError("export_compact needs at least one input in PredictConfig(input_names=...)")
        predictor = OfflinePredictor(self.config)
        predict = predictor.tf_function
        node_names = [name[:-2] if name.endswith(":0") else name for name in predictor.output_names]

        made: list[str] = []

        def named_outputs(*inputs: tf.Tensor) -> list[tf.Tensor]:
            outputs = [tf.identity(t, name=n) for t, n in zip(predict(*inputs), node_names)]
            made[:] = [t.op.name for t in outputs]
            return outputs

        concrete = tf.function(named_outputs, input_signature=list(predictor.input_signature), autograph=False)
        frozen = tf_private.convert_variables_to_constants(concrete.get_concrete_function())
        if made != node_names:
            raise ValueError(f"export_compact: outputs {node_names} cannot all be graph nodes of their own "
                             f"name (TensorFlow made {made}); output names must be distinct from the "
                             "input names and be valid op names")
        graph_def = frozen.graph.as_graph_def()
        if optimize:
            graph_def = tf_private.optimize_for_inference(
                graph_def, list(self.config.input_names), node_names,
                [s.dtype.as_datatype_enum for s in predictor.input_signature], toco_compatible)
        path = os.fspath(filename)
        with tf.io.gfile.GFile(path, "wb") as f:
            f.write(graph_def.SerializeToString())
        logger.info("Frozen inference graph written to %s (%s -> %s).", path, self.config.input_names,
                    node_names)
        return path


__getattr__ = unprovided(__name__)
