"""Callbacks that run functions and look at the values a step produces.

TF1 callbacks ran graph ops and fetched tensors by graph name. In TF2:

- an "op" is a callable (a ``tf.function`` or Python function) run with
  ``trainer.run`` (no callback hooks), see :class:`RunOp`;
- a tensor is fetched by the name under which the step exposes it (the keys
  of the mapping a plain step returns, or whatever a ``FetchableStep``
  resolves); tensorpack's ``"name:0"`` form means ``"name"``. Fetched values
  come back with the step, in the same call, through ``before_run`` /
  ``after_run``; a callback that fetches makes them go to the host every
  step, so fetch only what you need.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from trainstack.loop import Callback, RunContext, RunValues
from trainstack.loop.checks import check_bool

from .logdir import get_logger_dir
from .trainer_protocol import declares
from .variables import is_variable, to_numpy, variable_name

__all__ = ["RunOp", "RunUpdateOps", "ProcessTensors", "DumpTensors", "DumpTensor", "CheckNumerics"]

logger = logging.getLogger("trainstack.callbacks")


def _fetch_names(owner: str, names: str | Sequence[str]) -> list[str]:
    """Validate a list of value names; ``"x:0"`` (a TF1 tensor name) becomes ``"x"``."""
    if isinstance(names, str):
        names = [names]
    if (not isinstance(names, (list, tuple)) or not names
            or not all(isinstance(n, str) and n for n in names)):
        raise TypeError(f"{owner}: expected a non-empty list of value names (str), got {names!r}")
    return [n[:-2] if n.endswith(":0") else n for n in names]


class RunOp(Callback):
    """Run a callable before training, at each trigger and/or after each step.

    ``op`` is called with ``trainer.run(op)`` (no callback hooks), e.g. a
    ``tf.function`` that copies weights to a target network. tensorpack
    merged a per-step op into the training step's ``sess.run``; in TF2 it
    cannot join an already compiled step, so ``run_step`` runs it right
    after each step (put it in the step function if it must be inside).
    A hook whose flag is off is not called at all.
    """

    _chief_only = False

    def __init__(self, op: Callable[[], Any], run_before: bool = True, run_as_trigger: bool = True,
                 run_step: bool = False, verbose: bool = False) -> None:
        if not callable(op):
            raise TypeError(f"RunOp(op=...) must be a callable (a tf.function or Python function) to "
                            f"run with trainer.run(); got {op!r} ({type(op).__name__}). TF2 has no "
                            "graph ops to run by themselves")
        if not (run_before or run_as_trigger or run_step):
            raise ValueError("RunOp would never run: run_before, run_as_trigger and run_step are all "
                             "False")
        self._op = op
        self.run_before = check_bool(type(self).__name__, "run_before", run_before)
        self.run_as_trigger = check_bool(type(self).__name__, "run_as_trigger", run_as_trigger)
        self.run_step = check_bool(type(self).__name__, "run_step", run_step)
        self.verbose = verbose

    def overrides(self, hook: str) -> bool:
        flag = {"before_train": self.run_before, "trigger_epoch": self.run_as_trigger,
                "trigger_step": self.run_step}.get(hook)
        return flag is not False and super().overrides(hook)

    def _before_train(self) -> None:
        if self.run_before:
            self._run()

    def _trigger(self) -> None:
        if self.run_as_trigger:
            self._run()

    def _trigger_step(self) -> None:
        if self.run_step:
            self._run()

    def _run(self) -> None:
        if self.verbose:
            logger.info("%s: running %s ...", self.name, getattr(self._op, "__name__", self._op))
        self.trainer.run(self._op)


class RunUpdateOps(Callback):
    """Kept for porting; does nothing, and says so once at setup.

    tensorpack ran the ``UPDATE_OPS`` collection (e.g. batch-norm moving
    statistics) with each step. TF2 / Keras 3 layers update that state
    themselves inside ``call(training=True)``, in the step's graph, so there
    is nothing left to run. One you add yourself says so at INFO; the one
    ``DEFAULT_CALLBACKS()`` adds to every training says it at DEBUG only.
    """

    _chief_only = False
    # set by DEFAULT_CALLBACKS(): that instance is in every run, and its note would be noise there
    _added_by_default = False

    def __init__(self, collection: str | None = None) -> None:
        if collection is not None and not isinstance(collection, str):
            raise TypeError(f"RunUpdateOps(collection=...) must be None or a TF1 collection name, "
                            f"got {collection!r}")
        self._collection = collection

    def _setup_graph(self) -> None:
        if self._collection is None:
            log = logger.debug if self._added_by_default else logger.info
            log("RunUpdateOps does nothing in TF2: layers update their state (e.g. batch-norm "
                "statistics) inside the step when called with training=True.")
        else:
            logger.warning("RunUpdateOps(collection=%r) does nothing: TF2 has no graph collections "
                           "of update ops; put the updates in the step function.", self._collection)


class ProcessTensors(Callback):
    """Fetch named values with every step and call ``fn(*values)`` (NumPy values).

    Example: ``ProcessTensors(["cost1", "cost2"], lambda c1, c2: print(c1 + c2))``.
    """

    def __init__(self, names: str | Sequence[str], fn: Callable[..., Any]) -> None:
        self._names = _fetch_names(type(self).__name__, names)
        if not callable(fn):
            raise TypeError(f"{type(self).__name__}(fn=...) must be callable, got {fn!r}")
        self._fn = fn

    def _before_run(self, ctx: RunContext) -> list[str]:
        return self._names

    def _after_run(self, run_context: RunContext, run_values: RunValues) -> None:
        self._fn(*[to_numpy(v) for v in run_values.results])


class DumpTensors(ProcessTensors):
    """At each trigger, save the last step's values of ``names`` to
    ``<logger_dir>/DumpTensor-<global_step>.npz``.

    The values are fetched with every step (a trigger may come after any
    step). Load a dump with ``dict(np.load(path))``. Each file is written
    under a temporary name and renamed, so no dump is ever half-written.
    """

    def __init__(self, names: str | Sequence[str]) -> None:
        super().__init__(names, self._keep)
        self._latest: tuple | None = None
        self._dir: str | None = None

    def _setup_graph(self) -> None:
        self._dir = get_logger_dir()
        if self._dir is None:
            raise RuntimeError("DumpTensors writes to the logger directory, and none is set; call "
                               "set_logger_dir() before training")

    def _keep(self, *values: np.ndarray) -> None:
        self._latest = values

    def _trigger(self) -> None:
        if self._latest is None:
            return
        assert self._dir is not None  # set by _setup_graph
        path = os.path.join(self._dir, f"DumpTensor-{self.global_step}.npz")
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            np.savez(f, **dict(zip(self._names, self._latest)))
        os.replace(tmp, path)
        logger.info("DumpTensors: wrote %s", path)


#: tensorpack's alias.
DumpTensor = DumpTensors


class CheckNumerics(Callback):
    """Raise RuntimeError when values contain NaN or Inf (a failure, not a clean stop).

    - ``names`` given: those values are fetched with every step and checked
      after it (they exist only within their step, so ``run_as_trigger`` and
      ``run_step`` do not apply and must be left unset).
    - ``names=None`` (tensorpack's behaviour): the floating-point variables
      reachable from ``trainer.checkpoint_objects`` (a trackable or a dict
      of them; found at the first check) are checked at each trigger
      (``run_as_trigger``, default True) and/or after each step
      (``run_step``, default False). The check runs on the device; only one
      boolean per variable comes to the host.
    """

    def __init__(self, names: str | Sequence[str] | None = None, run_as_trigger: bool | None = None,
                 run_step: bool | None = None) -> None:
        if names is not None:
            self._names: list[str] | None = _fetch_names("CheckNumerics", names)
            if run_as_trigger is not None or run_step is not None:
                raise ValueError("CheckNumerics(names=...) checks the fetched values after every step; "
                                 "run_as_trigger/run_step apply to the variables check "
                                 "(names=None) only")
            self.run_as_trigger = self.run_step = False
        else:
            self._names = None
            self.run_as_trigger = True if run_as_trigger is None else bool(run_as_trigger)
            self.run_step = False if run_step is None else bool(run_step)
            if not (self.run_as_trigger or self.run_step):
                raise ValueError("CheckNumerics would never check: run_as_trigger and run_step are "
                                 "both False")
        self._variables: list[Any] | None = None
        self._all_finite: Callable[[], tf.Tensor] | None = None

    def overrides(self, hook: str) -> bool:
        if hook in ("before_run", "after_run"):
            return self._names is not None
        if hook == "trigger_epoch":
            return self.run_as_trigger
        if hook == "trigger_step":
            return self.run_step
        return super().overrides(hook)

    def _setup_graph(self) -> None:
        if self._names is None and not declares(self.trainer, "checkpoint_objects"):
            raise RuntimeError(
                f"CheckNumerics() without names checks the variables in trainer.checkpoint_objects, "
                f"and {type(self.trainer).__name__} has none; pass names= of values to check")

    # -- fetched values --------------------------------------------------------------------
    def _before_run(self, ctx: RunContext) -> list[str] | None:
        return self._names

    def _after_run(self, run_context: RunContext, run_values: RunValues) -> None:
        if self._names is None:
            return
        for name, value in zip(self._names, run_values.results):
            if not _all_finite(value):
                arr = to_numpy(value)
                raise RuntimeError(
                    f"CheckNumerics: {name!r} has {int(np.isnan(arr).sum())} NaN and "
                    f"{int(np.isinf(arr).sum())} Inf values ({arr.size} in all) in step "
                    f"{self.global_step} {self._where()}")

    # -- variables ---------------------------------------------------------------------------
    def _trigger(self) -> None:
        if self.run_as_trigger:
            self._check_variables()

    def _trigger_step(self) -> None:
        if self.run_step:
            self._check_variables()

    def _check_variables(self) -> None:
        if self._all_finite is None:
            self._variables = self._find_variables()
            variables = self._variables
            self._all_finite = tf.function(
                lambda: tf.stack([tf.reduce_all(tf.math.is_finite(v)) for v in variables]))
        if not self._variables:
            return
        finite = self._all_finite().numpy()
        if not finite.all():
            bad = [variable_name(v) for v, ok in zip(self._variables, finite) if not ok]
            raise RuntimeError(f"CheckNumerics: NaN or Inf in variable(s) {bad} after step "
                               f"{self.global_step} {self._where()}")

    def _find_variables(self) -> list[Any]:
        objects = self.trainer.checkpoint_objects  # type: ignore[attr-defined]  # a towers trainer's
        root = tf.train.Checkpoint(**objects) if isinstance(objects, Mapping) else objects
        view = tf.train.TrackableView(root)  # holds a weak reference: keep root alive
        found = [d for d in view.descendants()
                 if is_variable(d) and tf.as_dtype(d.dtype).is_floating]
        if not found:
            logger.warning("CheckNumerics: trainer.checkpoint_objects holds no floating-point "
                           "variables; nothing to check")
        return found

    def _where(self) -> str:
        return f"(epoch {self.epoch_num}, local step {self.local_step})"


def _all_finite(value: Any) -> bool:
    """Whether a fetched value has no NaN/Inf; tensors are reduced on their device first."""
    if tf.is_tensor(value):
        if not value.dtype.is_floating:
            return True
        return bool(tf.reduce_all(tf.math.is_finite(value)))
    arr = np.asarray(value)
    return not np.issubdtype(arr.dtype, np.floating) or bool(np.isfinite(arr).all())
