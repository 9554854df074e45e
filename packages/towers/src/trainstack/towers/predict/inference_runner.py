"""InferenceRunner: a callback running inferencers over a validation input at each trigger.

At ``setup_graph`` the runner sets up its own InputSource with the tower
function's input signature, and traces one inference tower (``TowerContext(
tower_name, is_training=False)``, the trainer's variables) in a ``tf.function``
that returns the tensors its inferencers ask for by name. Each trigger (after
every epoch by default; wrap it in ``PeriodicTrigger`` to change that) runs one
pass of the input, ``input.size()`` batches, with a progress bar, and puts the
inferencers' statistics to ``trainer.monitors``. Inferencers receive each batch's
size (the length of the first input with a batch dimension) to weight batches by.
Summaries the tower function records (``add_moving_summary``) are discarded in
the inference tower: the trainer's moving averages follow training only.

The trainer's callback registration is closed by the time the runner's
``setup_graph`` runs, so the runner drives its input's callbacks itself:
``setup_graph``, ``before_train`` (which resets the input), ``before_run`` /
``after_run`` around each inference batch (feeds), and ``after_train``. Their
epoch hooks are not called. Inputs stream pass after pass, so consecutive
triggers each see exactly one pass, in order, as long as ``size()`` is exact.
"""
from __future__ import annotations

import logging
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf
import tqdm

from trainstack.callbacks import summary_collection_scope
from trainstack.inputs import InputError, InputSource, QueueInput, TFDatasetInput
from trainstack.loop import Callback, Callbacks, RunContext, Trainer
from trainstack.loop.checks import check_int

from ..tower.context import TowerContext
from ..tower.tower import TowerFunc
from .inference import Inferencer
from .predictor import predict_device

__all__ = ["InferenceRunner"]

logger = logging.getLogger("trainstack.towers")

# trainer -> {claimed key: (owner, its description)}: the inference towers' names (owned by their
# runners) and the statistics' names (owned by their inferencers) are unique per trainer
_CLAIMS: weakref.WeakKeyDictionary[Trainer, dict[str, tuple[Any, str]]] = weakref.WeakKeyDictionary()


def _device_string(device: int | str | None, who: str) -> str | None:
    """None: no placement; an int k >= 0: GPU k (the CPU when there is no GPU); -1: the CPU."""
    if device is None or isinstance(device, str):
        return device
    device = check_int(who, "device", device, minimum=-1,
                       note="it takes None, a device string, a GPU index or -1 for the CPU")
    return "/device:CPU:0" if device == -1 else predict_device(device)


class InferenceRunner(Callback):
    """Run ``infs`` (:class:`Inferencer`) over ``input`` at each trigger.

    ``input``: an InputSource with an exact ``size()`` (the batches of one pass); a
    finite ``tf.data.Dataset`` of batches, read by a
    :class:`~trainstack.inputs.TFDatasetInput`; or a dataflow (anything with
    ``__len__`` whose ``iter()`` starts a pass), read through a
    :class:`~trainstack.inputs.QueueInput`: a background thread prepares the batches
    and the traced inference step dequeues them in the graph (no feeds). An
    InputSource serves one consumer: give each runner its own. Since inputs stream
    pass after pass and are never rewound, a ``StagingInput`` works too (tensorpack
    refused it).

    ``tower_name`` names the inference tower; several runners on one trainer need
    different names, and their inferencers different statistic names (e.g.
    ``ScalarStats(..., prefix="test")``): a clash is an error at ``setup_graph``.
    ``tower_func`` (default: ``trainer.tower_func``) builds the tower; ``device``:
    None (TensorFlow's placement), an int GPU index (the CPU when there is no
    GPU), -1 for the CPU, or a device string.

    Chief-only by default, as in tensorpack (``set_chief_only(False)`` to validate on
    every process of a distributed run).
    """

    def __init__(self, input: Any, infs: Inferencer | Sequence[Inferencer],
                 tower_name: str = "InferenceTower", tower_func: TowerFunc | None = None,
                 device: int | str | None = None) -> None:
        if isinstance(input, tf.data.Dataset):
            input = TFDatasetInput(input)
        elif not isinstance(input, InputSource):
            if isinstance(input, (tf.Tensor, np.ndarray, str, bytes)) or not hasattr(input, "__iter__"):
                raise TypeError(f"InferenceRunner(input=...) expects an InputSource, a tf.data.Dataset "
                                f"or a dataflow (an iterable of datapoints with __len__), got {input!r:.80}")
            input = QueueInput(input)
        infs = [infs] if isinstance(infs, Inferencer) else infs
        if not isinstance(infs, Sequence) or not infs:
            raise TypeError(f"InferenceRunner(infs=...) expects an Inferencer or a non-empty list of "
                            f"them, got {infs!r}")
        for i, inf in enumerate(infs):
            if not isinstance(inf, Inferencer):
                raise TypeError(f"InferenceRunner: infs[{i}] is {inf!r} ({type(inf).__name__}), "
                                "not an Inferencer")
        if not isinstance(tower_name, str) or not tower_name:
            raise TypeError(f"InferenceRunner(tower_name=...) must be a non-empty string, "
                            f"got {tower_name!r}")
        if tower_func is not None and not isinstance(tower_func, TowerFunc):
            raise TypeError(f"InferenceRunner(tower_func=...) must be a TowerFunc or None, "
                            f"got {tower_func!r}")
        self.input = input
        self.infs = list(infs)
        self.tower_name = tower_name
        self._tower_func = tower_func
        self._device = _device_string(device, "InferenceRunner")
        self._size = 0
        self._input_callbacks: Callbacks | None = None

    def _default_name(self) -> str:
        return f"InferenceRunner({self.tower_name})"

    @property
    def tower_func(self) -> TowerFunc:
        """The tower function the inference tower is built with."""
        if self._tower_func is not None:
            return self._tower_func
        tower_func = getattr(self.trainer, "tower_func", None)
        if tower_func is None:
            raise TypeError(f"{self.name} needs a trainer with a tower_func (a TowerTrainer such as "
                            f"SimpleTrainer, after its setup_graph) or InferenceRunner(tower_func=...); "
                            f"{type(self.trainer).__name__} has none")
        return tower_func

    # -- setup ----------------------------------------------------------------------------------
    def _setup_graph(self) -> None:
        self._setup_input_and_inferencers(num_towers=1)
        source, tower_func = self.input, self.tower_func
        fetches = [inf.get_fetches() for inf in self.infs]
        device = self._device

        def infer(feeds):
            with source.tracing(feeds):
                inputs = source.get_input_tensors(0)
            # summaries are the training tower's business: none recorded here
            with tf.device(device), summary_collection_scope(None), \
                    TowerContext(self.tower_name, is_training=False):
                tower_func(*inputs)
            handle = tower_func.towers[self.tower_name]
            values = [handle.get_tensors(names) for names in fetches]
            # the batch size, for inferencers weighting batches: the first batched input's length
            batched = [t for t in inputs if t.shape.rank]
            batch_size = tf.shape(batched[0])[0] if batched else tf.constant(-1)
            return values, batch_size

        self._infer = tf.function(infer, input_signature=[source.feed_signature()], autograph=False)
        logger.info("%s: building the inference tower %r%s ...", self.name, self.tower_name,
                    f" on {device}" if device else "")
        self._infer.get_concrete_function()  # trace now: a bad name or a new variable fails here

    def _setup_input_and_inferencers(self, num_towers: int) -> None:
        """Claim this runner's tower and statistic names, set up its input for ``num_towers``
        towers (and the input's callbacks, which this runner drives) and the inferencers."""
        self._claim(f"tower {self.tower_name!r}", "pass a different tower_name= to each InferenceRunner")
        for inf in self.infs:
            for stat in inf.stat_names() or ():
                self._claim_stat(stat, inf)
        source = self.input
        if source.is_setup:
            raise InputError(f"{self.name}: its input {source.name} is already set up (used by the "
                             "trainer or another runner); give each InferenceRunner its own input")
        source.setup(self.tower_func.input_signature, num_towers=num_towers)
        try:
            self._size = source.size()
        except InputError as e:
            raise InputError(f"{self.name} runs size() batches per pass and needs an input that knows "
                             f"its size: {e}") from e
        self._input_callbacks = Callbacks(source.get_callbacks())
        self._input_callbacks.setup_graph(self.trainer)
        for inf in self.infs:
            inf.setup_graph(self.trainer)

    def _claim(self, key: str, hint: str, owner: Any = None, label: str | None = None) -> None:
        """Reserve ``key`` on this trainer for ``owner`` (default: this runner); a clash is an error."""
        owner = self if owner is None else owner
        label = self.name if label is None else label
        claims = _CLAIMS.setdefault(self.trainer, {})
        holder, holder_label = claims.setdefault(key, (owner, label))
        if holder is not owner:
            raise ValueError(f"{label}: {key} is already used by {holder_label} on this trainer; {hint}")

    def _claim_stat(self, stat: str, inf: Inferencer) -> None:
        self._claim(f"statistic {stat!r}",
                    f"give {inf.name} another name for it (ScalarStats(prefix=...), "
                    "ClassificationError(summary_name=...), ...)", owner=inf,
                    label=f"{inf.name} of {self.name}")

    # -- running --------------------------------------------------------------------------------
    def _before_train(self) -> None:
        assert self._input_callbacks is not None
        self._input_callbacks.before_train()
        logger.info("%s: will run %d batches at each trigger.", self.name, self._size)

    def _trigger(self) -> None:
        for inf in self.infs:
            inf.before_inference()
        with tqdm.tqdm(total=self._size, desc=self.tower_name, leave=True, dynamic_ncols=True,
                       smoothing=0.5) as bar:
            for i in range(self._size):
                self._run_batch(i)
                bar.update(1)
        self._report()

    def _run_batch(self, index: int) -> None:
        self._accumulate(*self._run_step(self._infer, index))

    def _run_step(self, step: Any, index: int) -> Any:
        """Run ``step`` once with the input's feeds (its callbacks' before/after_run around it);
        an input that ends or fails mid-pass raises an InputError naming it."""
        group = self._input_callbacks
        ctx = RunContext(self.trainer, step, ())
        assert group is not None
        names, feeds, plan = group.before_run(ctx)
        if names:
            raise TypeError(f"{self.name}: callbacks of input {self.input.name} asked to fetch {names} "
                            "from the inference step, which has no named values to fetch")
        try:
            outputs = step(dict(feeds))
        except tf.errors.OutOfRangeError as e:
            where = f"{self.name}: input {self.input.name}"
            cause = getattr(self.input, "error", None)  # a QueueInput's failed thread
            if cause is not None:
                raise InputError(f"{where} failed after {index} of its {self._size} batches: "
                                 f"{cause}") from cause
            raise InputError(f"{where} ended after {index} of its {self._size} batches; an "
                             "InferenceRunner's input must stream pass after pass and report an "
                             "exact size()") from e
        group.after_run(ctx, {}, plan)
        return outputs

    def _accumulate(self, values: Any, batch_size: Any) -> None:
        """Give one batch's fetched ``values`` to the inferencers (batch size -1: unknown)."""
        batch_size = int(batch_size)
        batch_size = None if batch_size < 0 else batch_size
        for inf, results in zip(self.infs, values):
            inf.on_fetches([r.numpy() for r in results], batch_size)

    def _report(self) -> None:
        monitors = self.trainer.monitors
        assert monitors is not None
        for inf in self.infs:
            for stat, value in inf.after_inference().items():
                self._claim_stat(stat, inf)
                try:
                    value = float(np.asarray(value).reshape(()))
                except (TypeError, ValueError):
                    raise TypeError(f"{self.name}: {inf.name} reported {stat!r} = {value!r}; "
                                    "inferencers report scalars") from None
                monitors.put_scalar(stat, value)

    def _after_train(self) -> None:
        if self._input_callbacks is None:
            return
        errors = self._input_callbacks.after_train()
        if errors:
            raise errors[0]
