"""DataParallelInferenceRunner: validation over several inference towers, one per device.

Like :class:`~trainstack.towers.InferenceRunner`, but the traced inference
step builds ``K`` inference towers (``<tower_name>0 .. <tower_name>{K-1}``, on
``gpus``' devices), each taking its own batch from the input, so one call
validates ``K`` batches. A pass is still ``input.size()`` batches: when that
is not a multiple of ``K``, the last few batches run through a one-tower step.
Each tower's values reach the inferencers as a batch of their own, in tower
order.

The input must produce its batches inside the graph (a dataflow, read through
a ``QueueInput``, or any feedfree InputSource): the one-tower step takes one
batch where a fed input would give ``K``.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf
import tqdm

from trainstack.callbacks import summary_collection_scope
from trainstack.inputs import FeedfreeInput

from ..session.devices import check_devices, resolve_devices
from ..tower.context import TowerContext
from ..tower.tower import TowerFunc
from .inference import Inferencer
from .inference_runner import InferenceRunner

__all__ = ["DataParallelInferenceRunner"]

logger = logging.getLogger("trainstack.towers")


class DataParallelInferenceRunner(InferenceRunner):
    """Run ``infs`` over ``input`` with one inference tower per device of ``gpus``, at each trigger.

    ``gpus``: a count, device indices or device names (as the multi-GPU
    trainers take them, see :mod:`trainstack.towers.session.devices`). The other
    arguments are :class:`InferenceRunner`'s; ``input`` must be a dataflow or a
    feedfree InputSource.
    """

    def __init__(self, input: Any, infs: Inferencer | Sequence[Inferencer], gpus: Any,
                 tower_name: str = "InferenceTower", tower_func: TowerFunc | None = None) -> None:
        super().__init__(input, infs, tower_name=tower_name, tower_func=tower_func)
        if not isinstance(self.input, FeedfreeInput):
            raise TypeError(f"DataParallelInferenceRunner needs a dataflow or a feedfree InputSource "
                            f"(QueueInput, TFDatasetInput, ...), got {self.input.name}: its towers "
                            "each take their own batch inside the graph, which a fed input cannot give")
        #: the device of each inference tower
        self.devices = resolve_devices(gpus, "DataParallelInferenceRunner")

    def _default_name(self) -> str:
        return f"DataParallelInferenceRunner({self.tower_name})"

    @property
    def num_towers(self) -> int:
        return len(self.devices)

    # -- setup ----------------------------------------------------------------------------------
    def _setup_graph(self) -> None:
        check_devices(self.devices, self.name)
        self._setup_input_and_inferencers(self.num_towers)
        logger.info("%s: building %d inference towers on %s ...", self.name, self.num_towers,
                    ", ".join(self.devices))
        self._infer_all = self._make_step(self.num_towers)
        self._infer_one = self._make_step(1) if self._size % self.num_towers else None

    def _make_step(self, num_towers: int) -> Callable[[Any], Any]:
        """A traced function running towers ``0 .. num_towers-1``; returns, per tower, the
        inferencers' fetches and the tower's batch size."""
        source, tower_func = self.input, self.tower_func
        fetches = [inf.get_fetches() for inf in self.infs]

        def infer(feeds: Any) -> list[tuple[list[list[tf.Tensor]], tf.Tensor]]:
            outputs = []
            with source.tracing(feeds):
                for k in range(num_towers):
                    name = f"{self.tower_name}{k}"
                    with tf.device(self.devices[k]):
                        inputs = source.get_input_tensors(k)
                        with summary_collection_scope(None), TowerContext(name, is_training=False, index=k):
                            tower_func(*inputs)
                    handle = tower_func.towers[name]
                    batched = [t for t in inputs if t.shape.rank is None or t.shape.rank >= 1]
                    batch_size = tf.shape(batched[0])[0] if batched else tf.constant(-1)
                    outputs.append(([handle.get_tensors(names) for names in fetches], batch_size))
            return outputs

        step = tf.function(infer, input_signature=[source.feed_signature()], autograph=False)
        step.get_concrete_function()  # trace now: a bad name or a new variable fails here
        return step

    # -- running --------------------------------------------------------------------------------
    def _trigger(self) -> None:
        for inf in self.infs:
            inf.before_inference()
        done, k = 0, self.num_towers
        with tqdm.tqdm(total=self._size, desc=self.tower_name, leave=True, dynamic_ncols=True,
                       smoothing=0.5) as bar:
            while self._size - done >= k:
                self._run_towers(self._infer_all, done)
                done += k
                bar.update(k)
            while done < self._size:  # the rest of the pass, one batch at a time
                self._run_towers(self._infer_one, done)  # type: ignore[arg-type]  # made when a rest remains
                done += 1
                bar.update(1)
        self._report()

    def _run_towers(self, step: Callable[[Any], Any], index: int) -> None:
        for values, batch_size in self._run_step(step, index):
            self._accumulate(values, batch_size)
