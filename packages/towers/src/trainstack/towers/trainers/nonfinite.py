"""Non-finite values in a trainer's step: where the first one appeared, and skipping such steps.

:class:`NonFiniteCheck` checks each step's losses and the gradients it applies (one sum per
gradient; not under ``mixed_precision``, whose loss scaling handles overflows) for NaN and Inf,
and writes the first non-finite global step and tensor inside the traced step, without a branch
or a host round trip. The host reads it only to report: a saver refusing NaN weights,
``TerminateOnNaN`` and ``NonFiniteError`` name that step and tensor. Gradients are checked by
default because a NaN gradient under a finite loss is the hardest to find, and cannot be checked
after the fact; ``record_nonfinite="loss"`` or ``False`` makes it cheaper (costs: the towers
README). With ``skip_nonfinite_steps=True`` a step whose loss or gradients are not finite changes
nothing (weights, optimizer state, moving averages: see :class:`_DeferredAverages`), and
:class:`SkippedStepsReport` logs it and puts ``skipped_steps`` to the monitors.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from trainstack.callbacks import SummaryCollection
from trainstack.loop import Callback

__all__ = ["NonFiniteCheck", "apply_if_finite", "SkippedStepsReport"]

logger = logging.getLogger("trainstack.towers")

#: a step's record key is ``global step * _PER_STEP + index of the tensor`` (the first not finite)
_PER_STEP = 1 << 20
_NONE = np.iinfo(np.int64).max  # the first key of a record without a non-finite step
_TOWER_PREFIX = re.compile(r"^towerp?[0-9]+/")


class NonFiniteCheck:
    """A trainer's record of its steps whose loss or gradients were NaN or infinite (see the
    module docstring), and, with ``skip``, what keeps a skipped step from changing anything.

    In the traced step the trainer calls :meth:`begin` with the towers' losses, :meth:`gradients`
    for each set of gradients it applies (its result says whether to apply them), and :meth:`end`.
    The record is a few int64 scalars, updated without a branch (no host round trip): ``steps``
    (the steps run, numbered as the loop's global steps, see :meth:`start_at`), ``first`` (the
    smallest key of a non-finite step: ``step * 2**20 + index`` of the first tensor that was not
    finite in :attr:`names`); with ``skip`` also ``last`` (the largest) and ``count``.
    """

    def __init__(self, collection: SummaryCollection, check_gradients: bool = True,
                 skip: bool = False) -> None:
        with tf.init_scope():
            self.steps = tf.Variable(0, dtype=tf.int64, trainable=False, name="nonfinite/steps")
            self.first_key = tf.Variable(_NONE, dtype=tf.int64, trainable=False, name="nonfinite/first")
            self.last_key = (tf.Variable(-1, dtype=tf.int64, trainable=False, name="nonfinite/last")
                             if skip else None)
            self.count = (tf.Variable(0, dtype=tf.int64, trainable=False, name="nonfinite/count")
                          if skip else None)
        self.check_gradients = check_gradients
        self.skip = skip
        #: what index ``i`` of a key names (set while tracing; every trace builds the same)
        self.names: list[str] = []
        #: where the main tower records its summaries: with ``skip``, the averages wait for end()
        self.summaries: SummaryCollection = _DeferredAverages(collection) if skip else collection
        self._checks: list[tuple[tf.Tensor, list[str]]] | None = None
        self._loss_ok: tf.Tensor | None = None

    # -- in the traced step ----------------------------------------------------------------------
    def begin(self, losses: Sequence[tf.Tensor], named: Any = None) -> None:
        """Check the towers' losses of the step being traced (tower 0's first), which the
        reports call by the name of ``named`` (default: the first loss)."""
        oks = tf.math.is_finite(tf.stack(losses))
        self._loss_ok = oks[0] if len(losses) == 1 else tf.reduce_all(oks)
        name = _short_name(losses[0] if named is None else named)
        names = ([f"the loss {name!r}"] if len(losses) == 1
                 else [f"the loss {name!r} of tower {k}" for k in range(len(losses))])
        self._checks = [(oks, names)]

    def gradients(self, grads_and_vars: Sequence[tuple[Any, Any]]) -> tf.Tensor:
        """Whether the step's losses and these gradients are all finite (a boolean tensor); the
        gradients' check joins the step's record (unless ``check_gradients`` is False)."""
        finite = self._loss_ok if self._loss_ok is not None else tf.constant(True)
        if not self.check_gradients:
            return finite
        oks = tf.math.is_finite(tf.stack([_sum(g) for g, _ in grads_and_vars]))
        if self._checks is not None:
            self._checks.append((oks, [f"the gradient of {_variable_name(v)!r}" for _, v in grads_and_vars]))
        return tf.logical_and(finite, tf.reduce_all(oks))

    def end(self) -> None:
        """Write the step into the record; with ``skip``, make the moving averages' updates kept
        back while the step was traced, unless it is skipped."""
        checks, self._checks, self._loss_ok = self._checks, None, None
        if checks is None:
            raise RuntimeError("NonFiniteCheck.end() without begin(): the trainer's step is built wrongly")
        oks = checks[0][0] if len(checks) == 1 else tf.concat([ok for ok, _ in checks], axis=0)
        self.names = [name for _, names in checks for name in names]
        finite = tf.reduce_all(oks)
        key = self.steps.assign_add(1) * _PER_STEP
        if len(self.names) > 1:
            key += tf.argmin(tf.cast(oks, tf.int32), output_type=tf.int64)  # the first not finite
        self.first_key.assign(tf.minimum(self.first_key, tf.where(finite, tf.constant(_NONE, tf.int64), key)))
        if self.skip:
            assert self.last_key is not None and self.count is not None  # made with skip=True
            self.last_key.assign(tf.maximum(self.last_key, tf.where(finite, tf.constant(-1, tf.int64), key)))
            self.count.assign_add(1 - tf.cast(finite, tf.int64))
            self.summaries.flush(finite)  # type: ignore[attr-defined]  # a _DeferredAverages with skip

    # -- on the host -------------------------------------------------------------------------------
    def first(self) -> tuple[int, str] | None:
        """``(global step, what)`` of the first step whose loss or gradients were not finite."""
        key = int(self.first_key.numpy())
        return None if key == _NONE else self._decode(key)

    def last(self) -> tuple[int, str] | None:
        """``(global step, what)`` of the last skipped step (with ``skip``), or None."""
        key = int(self.last_key.numpy()) if self.last_key is not None else -1
        return None if key < 0 else self._decode(key)

    def skipped(self) -> int:
        """How many steps were skipped (with ``skip``; 0 without)."""
        return int(self.count.numpy()) if self.count is not None else 0

    def _decode(self, key: int) -> tuple[int, str]:
        step, index = divmod(key, _PER_STEP)
        what = self.names[index] if 0 <= index < len(self.names) else f"tensor #{index} of the step"
        return step, what

    def start_at(self, global_step: int) -> None:
        """Number the steps from here: the next step run is ``global_step + 1``."""
        self.steps.assign(global_step)

    def callback(self) -> Callback:
        """The callback that keeps the record's step numbers those of the loop (and, with
        ``skip``, reports each skipped step)."""
        return SkippedStepsReport(self) if self.skip else _NumberSteps(self)


def apply_if_finite(optimizer: Any, grads_and_vars: Sequence[tuple[Any, Any]], finite: tf.Tensor) -> None:
    """In the traced step: ``optimizer.apply_gradients(grads_and_vars)`` when ``finite`` (see
    :meth:`NonFiniteCheck.gradients`), else nothing (the weights and the optimizer's state stay)."""
    def apply() -> tf.Tensor:
        optimizer.apply_gradients(grads_and_vars)
        return tf.constant(True)

    tf.cond(finite, apply, lambda: tf.constant(False))


class _DeferredAverages(SummaryCollection):
    """The trainer's summary collection as the main tower records into it when a step may be
    skipped: every summary is recorded as usual, in the same entries, except the moving
    averages, whose updates are kept back until the step knows whether it is skipped, then
    made only if it is not (:meth:`flush`). Else a skipped step's NaN loss would enter the
    average, and the smoothed cost would stay NaN for the rest of the run.

    ``add_moving_summary`` therefore returns the values it was given, not the updated averages.
    """

    def __init__(self, collection: SummaryCollection) -> None:
        # not SummaryCollection.__init__: the entries and the lock are the collection's
        self._collection = collection
        self._pending: list[tuple[Any, str, float]] = []

    def __getattr__(self, name: str) -> Any:
        # the collection's state (its entries, its lock, its name): the inherited methods that
        # record (add_summary, ...) record into the collection itself
        collection = self.__dict__.get("_collection")
        if collection is None:
            raise AttributeError(name)
        return getattr(collection, name)

    def add_moving_average(self, tensor: Any, name: str, decay: float = 0.95) -> tf.Tensor:
        tensor = tf.convert_to_tensor(tensor)
        self._pending.append((tensor, name, decay))
        return tensor

    def flush(self, keep: tf.Tensor) -> None:
        """Make the updates kept back, if ``keep`` (a boolean tensor)."""
        pending, self._pending = self._pending, []
        if not pending:
            return

        def update() -> tf.Tensor:
            for tensor, name, decay in pending:
                self._collection.add_moving_average(tensor, name, decay)
            return tf.constant(True)

        tf.cond(keep, update, lambda: tf.constant(False))


class _NumberSteps(Callback):
    """Numbers the record's steps as the loop does (global steps), from where the run starts."""

    _chief_only = False

    def __init__(self, check: NonFiniteCheck) -> None:
        self.check = check

    def _before_train(self) -> None:
        self.check.start_at(self.global_step)


class SkippedStepsReport(_NumberSteps):
    """Logs each step a trainer skipped because its loss or gradients were not finite (its
    global step, the tensor, the count so far), and puts the count into the monitors as
    ``skipped_steps`` at each epoch's end."""

    def __init__(self, check: NonFiniteCheck) -> None:
        super().__init__(check)
        self._seen = 0

    def _before_train(self) -> None:
        super()._before_train()
        self._seen = self.check.skipped()

    def _trigger_step(self) -> None:
        count = self.check.skipped()
        if count > self._seen:
            new, self._seen = count - self._seen, count
            last = self.check.last()
            assert last is not None  # a step was skipped
            step, what = last
            # several skipped steps in one call (steps_per_run): the record knows the last one
            others = f" ({new - 1} earlier step(s) of this call were skipped too)" if new > 1 else ""
            logger.warning("global step %d: %s was not finite (NaN or Inf); the step was skipped: the "
                           "weights, the optimizer's state and the moving averages are unchanged%s. "
                           "%d step(s) skipped in this run.", step, what, others, count)

    def _trigger_epoch(self) -> None:
        assert self.trainer.monitors is not None
        self.trainer.monitors.put_scalar("skipped_steps", self.check.skipped())


def _sum(grad: Any) -> tf.Tensor:
    """The sum of a gradient's elements, in float32 at least: not finite when an element is NaN
    or infinite (NaN and Inf propagate through a sum, and Inf - Inf is NaN). One vectorized
    reduction: half the time of ``reduce_all(is_finite(g))`` on a 784x256 gradient in a graph
    loop (which makes and reduces a boolean tensor as large as the gradient), a fifth of it
    in a step of its own. A sum also overflows when the finite elements add up beyond
    float32's range (3.4e38), which counts as not finite: a gradient that large is one. An
    IndexedSlices' values are summed, with no dense copy."""
    values = grad.values if isinstance(grad, tf.IndexedSlices) else tf.convert_to_tensor(grad)
    if values.dtype.size < 4:  # float16 sums would overflow at 65504: add up in float32
        values = tf.cast(values, tf.float32)
    return tf.cast(tf.reduce_sum(values), tf.float32)


def _variable_name(variable: Any) -> str:
    name = getattr(variable, "path", None) or getattr(variable, "name", None) or repr(variable)
    return name.split(":")[0]


def _short_name(tensor: Any) -> str:
    """A tensor's name without its tower's scope and output index (``tower0/cost:0`` -> ``cost``)."""
    name = getattr(tensor, "name", None) or "cost"
    return _TOWER_PREFIX.sub("", name.split(":")[0])
