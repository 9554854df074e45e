"""tensorpack 0.11's ``tensorpack.utils.stats``: counters of values, ratios and binary decisions."""
from __future__ import annotations

from typing import Any

import numpy as np

from .._replaced import unprovided

__all__ = ["StatCounter", "BinaryStatistics", "RatioCounter", "Accuracy", "OnlineMoments"]


class StatCounter:
    """Keeps every value fed; gives their count, average, sum, max and min."""

    def __init__(self) -> None:
        self.reset()

    def feed(self, v: Any) -> None:
        """Add a value (a float, or an array of the same shape as the others)."""
        self._values.append(v)

    def reset(self) -> None:
        self._values: list[Any] = []

    @property
    def count(self) -> int:
        return len(self._values)

    def _nonempty(self) -> list[Any]:
        if not self._values:
            raise AssertionError("StatCounter has no values: feed() some first")
        return self._values

    @property
    def average(self) -> Any:
        return np.mean(self._nonempty())

    @property
    def sum(self) -> Any:
        return np.sum(self._nonempty())

    @property
    def max(self) -> Any:
        return max(self._nonempty())

    @property
    def min(self) -> Any:
        return min(self._nonempty())

    def samples(self) -> list[Any]:
        """Every value fed, in order."""
        return self._values


class RatioCounter:
    """Counts events of interest among all events: ``ratio`` is count / total (0 before any)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._tot: Any = 0
        self._cnt: Any = 0

    def feed(self, count: Any, total: Any = 1) -> None:
        """Add ``count`` events of interest out of ``total`` events."""
        self._tot += total
        self._cnt += count

    @property
    def ratio(self) -> Any:
        if self._tot == 0:
            return 0
        return self._cnt * 1.0 / self._tot

    @property
    def total(self) -> Any:
        return self._tot

    @property
    def count(self) -> Any:
        return self._cnt


class Accuracy(RatioCounter):
    """A :class:`RatioCounter` whose ratio is called ``accuracy``."""

    @property
    def accuracy(self) -> Any:
        return self.ratio


class BinaryStatistics:
    """Precision, recall, false positive and false negative rates of binary predictions."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.nr_pos: Any = 0
        self.nr_neg: Any = 0
        self.nr_pred_pos: Any = 0
        self.nr_pred_neg: Any = 0
        self.corr_pos: Any = 0
        self.corr_neg: Any = 0

    def feed(self, pred: np.ndarray, label: np.ndarray) -> None:
        """Add binary predictions and their labels (arrays of the same shape)."""
        if pred.shape != label.shape:
            raise AssertionError(f"{pred.shape} != {label.shape}")
        self.nr_pos += (label == 1).sum()
        self.nr_neg += (label == 0).sum()
        self.nr_pred_pos += (pred == 1).sum()
        self.nr_pred_neg += (pred == 0).sum()
        self.corr_pos += ((pred == 1) & (pred == label)).sum()
        self.corr_neg += ((pred == 0) & (pred == label)).sum()

    @property
    def precision(self) -> Any:
        if self.nr_pred_pos == 0:
            return 0
        return self.corr_pos * 1.0 / self.nr_pred_pos

    @property
    def recall(self) -> Any:
        if self.nr_pos == 0:
            return 0
        return self.corr_pos * 1.0 / self.nr_pos

    @property
    def false_positive(self) -> Any:
        if self.nr_pred_pos == 0:
            return 0
        return 1 - self.precision

    @property
    def false_negative(self) -> Any:
        if self.nr_pos == 0:
            return 0
        return 1 - self.recall


class OnlineMoments:
    """Mean and (sample) variance computed online, without keeping the values (Welford's algorithm)."""

    def __init__(self) -> None:
        self._mean: Any = 0
        self._M2: Any = 0
        self._n = 0

    def feed(self, x: Any) -> None:
        """Add a value (a float, or an array of the same shape as the others)."""
        self._n += 1
        delta = x - self._mean
        self._mean += delta * (1.0 / self._n)
        delta2 = x - self._mean
        self._M2 += delta * delta2

    @property
    def mean(self) -> Any:
        return self._mean

    @property
    def variance(self) -> Any:
        return self._M2 / (self._n - 1)

    @property
    def std(self) -> Any:
        return np.sqrt(self.variance)


__getattr__ = unprovided(__name__)
