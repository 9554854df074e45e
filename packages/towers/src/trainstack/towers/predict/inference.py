"""Inferencers: what an :class:`~trainstack.towers.InferenceRunner` computes over a validation pass.

An inferencer names the tensors it needs from the inference tower
(:meth:`Inferencer.get_fetches`), receives their values batch after batch
(:meth:`Inferencer.on_fetches`) and reduces them to named scalars at the end
of the pass (:meth:`Inferencer.after_inference`), which the runner puts to
``trainer.monitors``. Inferencers are not callbacks: only a runner drives them.

Tensor names are those given inside the tower (``tf.identity(x, name="cost")``)
or the names of the tower's inputs.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from trainstack.loop import Trainer

__all__ = ["Inferencer", "ScalarStats", "ClassificationError", "BinaryClassificationStats"]

logger = logging.getLogger("trainstack.towers")

_OUTPUT_INDEX = re.compile(r":0$")


def _stat_base(tensor_name: str) -> str:
    """``"cost:0"`` -> ``"cost"``: the name a statistic of that tensor is reported under."""
    return _OUTPUT_INDEX.sub("", tensor_name)


def _names_arg(owner: str, arg: str, names: Any) -> list[str]:
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, Sequence) or not names or not all(
            isinstance(n, str) and n for n in names):
        raise TypeError(f"{owner}({arg}=...) expects a tensor name or a non-empty list of tensor "
                        f"names, got {names!r}")
    return list(names)


class Inferencer:
    """Base class of inferencers. Subclasses override the ``_hooks``:

    - ``_get_fetches()``: names of the tensors needed for each batch;
    - ``_before_inference()``: reset the accumulators before a pass;
    - ``_on_fetches(results)``: take one batch's values, in ``get_fetches()`` order
      (NumPy arrays); ``self.batch_size`` is the number of datapoints in that batch
      (the leading dimension of the tower's first batched input), or None when
      the inputs have no batch dimension;
    - ``_after_inference()``: return ``{stat name: scalar}`` for the monitors;
    - ``_stat_names()``: the names ``_after_inference`` will return, when known in
      advance (lets the runner refuse clashing names before training starts).
    """

    trainer: Trainer | None = None

    #: Datapoints in the batch being handed to :meth:`on_fetches` (None: unknown).
    batch_size: int | None = None

    # -- public API: bookkeeping, then the hook --------------------------------------
    def setup_graph(self, trainer: Trainer) -> None:
        """Called once by the runner's ``setup_graph``, before ``get_fetches``."""
        self.trainer = trainer
        self._setup_graph()

    def get_fetches(self) -> list[str]:
        """The names of the tensors this inferencer needs from each batch."""
        return _names_arg(self.name, "get_fetches", self._get_fetches())

    def before_inference(self) -> None:
        """Start a new pass."""
        self._before_inference()

    def on_fetches(self, results: Sequence[Any], batch_size: int | None = None) -> None:
        """Receive one batch's values of :meth:`get_fetches`, as NumPy arrays."""
        self.batch_size = batch_size
        self._on_fetches([np.asarray(r) for r in results])

    def after_inference(self) -> dict[str, Any]:
        """End the pass; return the statistics to report (name -> scalar)."""
        ret = self._after_inference()
        if ret is None:
            return {}
        if not isinstance(ret, Mapping):
            raise TypeError(f"{self.name}._after_inference() must return a dict name -> scalar or "
                            f"None, got {ret!r}")
        return dict(ret)

    def stat_names(self) -> list[str] | None:
        """The names :meth:`after_inference` reports, or None when not known in advance."""
        names = self._stat_names()
        return None if names is None else list(names)

    @property
    def name(self) -> str:
        return type(self).__name__

    def __str__(self) -> str:
        return self.name

    # -- hooks ----------------------------------------------------------------------------
    def _setup_graph(self) -> None:
        pass

    def _get_fetches(self) -> Sequence[str]:
        raise NotImplementedError(f"{type(self).__name__} must implement _get_fetches()")

    def _before_inference(self) -> None:
        pass

    def _on_fetches(self, results: list[np.ndarray]) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement _on_fetches(results)")

    def _after_inference(self) -> Mapping[str, Any] | None:
        return None

    def _stat_names(self) -> Sequence[str] | None:
        return None


class ScalarStats(Inferencer):
    """The mean of scalar tensors over a pass, reported as ``<prefix>_<name>``.

    Each batch's value is weighted by its number of datapoints, so that the mean
    of a per-batch mean (a cost, an accuracy) is the mean over the whole pass even
    when the last batch is smaller. (tensorpack averaged batches unweighted; the
    two agree when all batches have the same size.) A per-batch *ratio* is still
    not the ratio over the pass in general: see :class:`ClassificationError`.
    """

    def __init__(self, names: str | Sequence[str], prefix: str = "validation") -> None:
        self.names = _names_arg("ScalarStats", "names", names)
        if not isinstance(prefix, str):
            raise TypeError(f"ScalarStats(prefix=...) must be a string, got {prefix!r}")
        self.prefix = prefix
        self._sums = np.zeros(len(self.names), np.float64)
        self._weight = 0.0

    def _get_fetches(self) -> list[str]:
        return self.names

    def _stat_names(self) -> list[str]:
        return [f"{self.prefix}_{_stat_base(n)}" if self.prefix else _stat_base(n) for n in self.names]

    def _before_inference(self) -> None:
        self._sums = np.zeros(len(self.names), np.float64)
        self._weight = 0.0

    def _on_fetches(self, results: list[np.ndarray]) -> None:
        for name, value in zip(self.names, results):
            if value.size != 1:
                raise ValueError(f"ScalarStats: tensor {name!r} must be a scalar, got an array of "
                                 f"shape {value.shape}; reduce it in the model (e.g. tf.reduce_mean)")
        weight = 1.0 if self.batch_size is None else float(self.batch_size)
        self._sums += weight * np.array([float(v.reshape(())) for v in results])
        self._weight += weight

    def _after_inference(self) -> dict[str, float]:
        if self._weight == 0:
            return {}
        return dict(zip(self._stat_names(), (self._sums / self._weight).tolist()))


class ClassificationError(Inferencer):
    """The true error rate over a pass: total wrong / total datapoints.

    ``wrong_tensor_name`` names a vector with one entry per datapoint, nonzero
    where the datapoint is misclassified (e.g. ``tf.cast(tf.logical_not(
    tf.nn.in_top_k(...)), tf.float32)``). Unlike ``ScalarStats`` of a per-batch
    error rate, batches of different sizes count by their datapoints. A vector of
    *correct* predictions gives the accuracy instead.
    """

    def __init__(self, wrong_tensor_name: str = "incorrect_vector",
                 summary_name: str = "validation_error") -> None:
        self.wrong_tensor_name = _names_arg("ClassificationError", "wrong_tensor_name",
                                            wrong_tensor_name)[0]
        if not isinstance(summary_name, str) or not summary_name:
            raise TypeError(f"ClassificationError(summary_name=...) must be a non-empty string, "
                            f"got {summary_name!r}")
        self.summary_name = summary_name
        self._wrong = 0.0
        self._count = 0

    def _get_fetches(self) -> list[str]:
        return [self.wrong_tensor_name]

    def _stat_names(self) -> list[str]:
        return [self.summary_name]

    def _before_inference(self) -> None:
        self._wrong, self._count = 0.0, 0

    def _on_fetches(self, results: list[np.ndarray]) -> None:
        vec = results[0]
        if vec.ndim != 1:
            raise ValueError(f"ClassificationError: {self.wrong_tensor_name!r} must be a vector "
                             f"(one entry per datapoint), got shape {vec.shape}")
        self._wrong += float(np.sum(vec))
        self._count += len(vec)

    def _after_inference(self) -> dict[str, float]:
        if self._count == 0:
            return {}
        return {self.summary_name: self._wrong / self._count}


class BinaryClassificationStats(Inferencer):
    """Precision and recall over a pass, from 0/1 prediction and label tensors of the same shape;
    reported as ``<prefix>_precision`` and ``<prefix>_recall`` (0 when undefined, as tensorpack)."""

    def __init__(self, pred_tensor_name: str, label_tensor_name: str, prefix: str = "val") -> None:
        self.pred_tensor_name = _names_arg(self.name, "pred_tensor_name", pred_tensor_name)[0]
        self.label_tensor_name = _names_arg(self.name, "label_tensor_name", label_tensor_name)[0]
        self.prefix = prefix
        self._tp = self._pred_pos = self._label_pos = 0

    def _get_fetches(self) -> list[str]:
        return [self.pred_tensor_name, self.label_tensor_name]

    def _stat_names(self) -> list[str]:
        return [f"{self.prefix}_precision", f"{self.prefix}_recall"]

    def _before_inference(self) -> None:
        self._tp = self._pred_pos = self._label_pos = 0

    def _on_fetches(self, results: list[np.ndarray]) -> None:
        pred, label = results
        if pred.shape != label.shape:
            raise ValueError(f"{self.name}: {self.pred_tensor_name!r} has shape {pred.shape} but "
                             f"{self.label_tensor_name!r} has shape {label.shape}; expected the same")
        pred, label = pred != 0, label != 0
        self._tp += int(np.count_nonzero(pred & label))
        self._pred_pos += int(np.count_nonzero(pred))
        self._label_pos += int(np.count_nonzero(label))

    def _after_inference(self) -> dict[str, float]:
        precision = self._tp / self._pred_pos if self._pred_pos else 0.0
        recall = self._tp / self._label_pos if self._label_pos else 0.0
        return dict(zip(self._stat_names(), (precision, recall)))
