"""StagingInput: copy the next batch onto the compute device while the current step runs.

tensorpack used a ``StagingArea`` put/get pair; in TF2 each tower keeps
``nr_stage`` buffers, ``tf.Variable``s of unknown shape on the tower's
device. A step reads the oldest staged batch, then assigns the wrapped
source's next batch into the buffers. Within the traced step, automatic
control dependencies order the read before the assign of the same variable,
and nothing the model computes waits for the assign, so the host-to-device
copy of batch t+1 overlaps the compute on batch t.

The buffers are filled before training, when the source's callback resets it:
a small traced function takes ``nr_stage x K`` batches from the wrapped source,
stage by stage and tower by tower within a stage, so stage ``j`` of tower
``k`` holds batch ``j*K + k``. Each step then reads stage 0 of every tower and
takes one new batch per tower, in tower order: step ``s`` trains tower ``k`` on
batch ``s*K + k`` of the wrapped source, exactly the order an unstaged source
gives, and no batch is lost or used twice. The step must be traced (so that
every tower's buffers exist) before training starts, as every trainer does in
``setup_graph``.

On a machine without an accelerator the buffers live in host memory: it
works, but only adds a copy.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

import tensorflow as tf

from trainstack.callbacks.eager_state import eager_state
from trainstack.loop import Callback
from trainstack.loop.checks import check_int

from .base import FeedfreeInput
from .errors import InputError

__all__ = ["StagingInput"]


class StagingInput(FeedfreeInput):
    """Wraps the feedfree source ``input``; prefetches its batches onto the tower's device.

    ``nr_stage`` batches are kept per tower (one suffices: the copy of the
    next batch runs during the step; each extra stage costs one device copy
    per step). The buffers are created, outside the step function, on the
    first trace of each tower's :meth:`get_input_tensors`, on ``device`` if
    given, else on the device scope active there (the tower's device); a
    step function traced again reuses them. The callbacks are the wrapped
    source's; ``size()`` is its size.
    """

    #: each tower reads its own buffers; the wrapped source orders its reads itself
    reads_in_tower_order = False

    def __init__(self, input: FeedfreeInput, nr_stage: int = 1, device: str | None = None) -> None:
        super().__init__()
        if isinstance(input, StagingInput):
            raise TypeError("StagingInput cannot wrap another StagingInput; use nr_stage= instead")
        if not isinstance(input, FeedfreeInput):
            raise TypeError(f"StagingInput wraps a FeedfreeInput (a queue, a dataset, tensors), got "
                            f"{input!r} ({type(input).__name__}); inputs fed from Python have no "
                            "graph-side batch to stage")
        nr_stage = check_int("StagingInput", "nr_stage", nr_stage, minimum=1)
        if device is not None and not isinstance(device, str):
            raise TypeError(f"StagingInput: device must be a device name (str) or None, got {device!r}")
        self.input = input
        self.nr_stage = nr_stage
        self.device = device
        #: tower index -> its stages (oldest first), each a list of variables in signature order
        self.buffers: dict[int, list[list[tf.Variable]]] = {}
        self._prime: tf.types.experimental.GenericFunction | None = None

    @property
    def name(self) -> str:
        return f"StagingInput({self.input.name})"

    def _setup(self, signature: tuple[tf.TensorSpec, ...]) -> None:
        self.input.setup(signature, num_towers=self.num_towers)

    @contextlib.contextmanager
    def tracing(self, feeds: Mapping[str, tf.Tensor] | None = None) -> Iterator[None]:
        with super().tracing(feeds), self.input.tracing():
            yield

    def _get_callbacks(self) -> list[Callback]:
        return self.input.get_callbacks()

    def _size(self) -> int:
        return self.input.size()

    def _get_input_tensors(self, tower_index: int) -> list[tf.Tensor]:
        with _device(self.device):
            stages = self._buffers_of(tower_index)
        new = self.input.get_input_tensors(tower_index)  # the batch staged during this step
        with _device(self.device):
            # reads come before the assigns: automatic control dependencies keep program order
            # on each variable, and the model's compute waits for the reads only
            out = [v.read_value() for v in stages[0]]
            for older, newer in zip(stages, stages[1:]):
                for dst, src in zip(older, newer):
                    dst.assign(src.read_value(), read_value=False)
            for dst, src in zip(stages[-1], new):
                dst.assign(src, read_value=False)
        for t, src in zip(out, new):
            t.set_shape(src.shape)
        return out

    def resume_at_step(self, global_step: int) -> bool:
        """Nothing to do here: the wrapped source's own callback (registered with this one's, and
        run before it) resumes the wrapped source; the stages are filled from there."""
        return True

    def _reset_state(self) -> None:
        missing = [k for k in range(self.num_towers) if k not in self.buffers]
        if missing:
            raise InputError(
                f"{self.name} has no buffers for tower(s) {missing} of {self.num_towers}: trace the step "
                "(call get_input_tensors(k) for every tower k inside the traced function) before "
                "training starts, so that the buffers exist when they are filled")
        if self._prime is None:
            self._prime = tf.function(self._fill_stages, autograph=False)
        self._prime()

    def _fill_stages(self) -> None:
        """Fill every tower's stages from the wrapped source: stage-major, then tower order, so
        that the batches reach the towers in the wrapped source's order."""
        for stage in range(self.nr_stage):
            for k in range(self.num_towers):
                buffers = self.buffers[k][stage]
                batch = self.input.get_input_tensors(k)  # outside a trace: each call reads afresh
                with tf.device(buffers[0].device):
                    for v, t in zip(buffers, batch):
                        v.assign(t, read_value=False)

    def _buffers_of(self, tower_index: int) -> list[list[tf.Variable]]:
        """Tower ``tower_index``'s buffers, created (outside any function) on its first trace."""
        stages = self.buffers.get(tower_index)
        if stages is not None:
            return stages
        # lifted out of the step's graph (not counted as the trace's own); a device string scope stays
        with eager_state():
            stages = [[tf.Variable(tf.zeros([0], spec.dtype), shape=tf.TensorShape(None), trainable=False,
                                   name=f"staging_tower{tower_index}_{spec.name}_{i}")
                       for spec in self.input_signature]
                      for i in range(self.nr_stage)]
        self.buffers[tower_index] = stages
        return stages


def _device(device: str | None) -> contextlib.AbstractContextManager:
    return tf.device(device) if device else contextlib.nullcontext()
