"""TowerSummaries: the moving summaries of a step of several towers, averaged over the towers.

In a step of K training towers (the multi-GPU trainers) every tower runs the model's code on
its own batch, so every tower calls ``add_moving_summary(cost)``. The step's value is the mean
of the towers' values: for equal batches and a value that is a mean over the batch (a loss, an
accuracy), the value one tower computes on the K batches concatenated. So each moving average
is updated once per step with that mean, and the logged curve of K towers is the one-tower
curve of the same data (tensorpack logged tower 0's: a K-th of the batch). A name that only
some towers record (under ``if ctx.index == 0``) is averaged over those.

The other summaries (``add_tensor_summary``, ``tf.summary.*`` computed when fetched) come from
the main tower (tower 0) alone, as in tensorpack: a histogram or an image has no mean.
"""
from __future__ import annotations

import threading
from typing import Any

import tensorflow as tf

from trainstack.callbacks import SummaryCollection

__all__ = ["TowerSummaries"]


class TowerSummaries:
    """What the towers of one step record, while it is traced; :meth:`flush` updates the moving
    averages of ``target`` (the trainer's collection) with the towers' means.

    :meth:`tower` gives tower ``index`` the collection to record into (under
    ``summary_collection_scope``); towers may be built in other threads (a
    ``tf.distribute`` strategy's replicas).
    """

    def __init__(self, target: SummaryCollection) -> None:
        self.target = target
        self._lock = threading.Lock()
        #: name -> (decay, {tower index: value}), in the order first recorded
        self._averages: dict[str, tuple[float, dict[int, tf.Tensor]]] = {}

    def tower(self, index: int) -> SummaryCollection:
        """The collection tower ``index`` records into."""
        return _TowerRecorder(self, index)

    def add_moving_average(self, index: int, tensor: Any, name: str, decay: float) -> tf.Tensor:
        """Keep tower ``index``'s value of the moving average ``name``; return the value."""
        value = SummaryCollection.moving_average_input(tensor, name, decay)
        with self._lock:
            known, values = self._averages.setdefault(name, (float(decay), {}))
            if index in values:
                raise ValueError(f"{name!r} was recorded twice while tracing tower {index}; pass distinct "
                                 "name= to each")
            if known != float(decay):
                raise ValueError(f"moving average {name!r} was recorded with decay {known}, now with decay "
                                 f"{decay} (tower {index}); use one decay per name")
            values[index] = value
        return value

    def flush(self) -> None:
        """Update each moving average once, with the mean of the towers' values (in the graph
        being traced, after the towers)."""
        with self._lock:
            averages, self._averages = self._averages, {}
        for name, (decay, values) in averages.items():
            towers = [values[k] for k in sorted(values)]
            if len(towers) == 1:
                mean = towers[0]
            else:
                with tf.name_scope("tower_mean"):
                    dtype = towers[0].dtype
                    mean = tf.add_n([tf.cast(t, dtype) for t in towers]) / tf.cast(len(towers), dtype)
            self.target.add_moving_average(mean, name, decay)


class _TowerRecorder(SummaryCollection):
    """The collection one tower of a step records into: its moving summaries go to the step's
    :class:`TowerSummaries`, its other summaries to the trainer's collection if it is the main
    tower (index 0), nowhere otherwise."""

    def __init__(self, gathered: TowerSummaries, index: int) -> None:
        # not SummaryCollection.__init__: what it reads (name, entries, lock) is the target's
        self._gathered = gathered
        self._index = index

    def __getattr__(self, name: str) -> Any:
        gathered = self.__dict__.get("_gathered")
        if gathered is None:
            raise AttributeError(name)
        return getattr(gathered.target, name)

    def add_moving_average(self, tensor: Any, name: str, decay: float = 0.95) -> tf.Tensor:
        return self._gathered.add_moving_average(self._index, tensor, name, decay)

    def add_summary(self, tensor: Any, name: str, summary_type: str = "scalar", exact_name: bool = False) -> None:
        if self._index == 0:
            self._gathered.target.add_summary(tensor, name, summary_type, exact_name)

    def add_fetched_summary(self, name: str, kind: str, fetch: str) -> None:
        if self._index == 0:
            self._gathered.target.add_fetched_summary(name, kind, fetch)
