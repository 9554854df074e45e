"""SingleCostTrainer: builds the training step of a model with a single cost::

    trainer.setup_graph(model.get_input_signature(), QueueInput(df),
                        model.build_graph, model.get_optimizer)
    trainer.train_with_defaults(callbacks=[ModelSaver()], max_epoch=10)

``setup_graph`` sets up the InputSource, registers its callbacks and traces the step; the
step's first trace creates the model's variables (eagerly, see ``variable_creation.py``) and the
optimizer's slots, so the model is traced once. A trainer that places or mirrors its variables
(several towers, a ``tf.distribute`` strategy, XLA) creates them in a trace of its own first
(``_variables_in_step``, ``_build_variables``). After ``setup_graph`` every variable exists and
the graph is frozen (see :mod:`trainstack.towers.tower.step`). The
step is a :class:`~trainstack.towers.tower.step.TracedStep`: callbacks fetch tensors by their
names inside the main training tower in the same call as the training step.

How one step is built (the hooks subclasses override, e.g. multi-device trainers that build
``num_towers`` towers on several devices)::

    _get_tower_inputs(feeds)   one list of input tensors per tower (under each tower's device)
    _build_towers(inputs, record_summaries) -> [TowerResult(cost, grads_and_vars, handle)]
                               via _build_tower(k, inputs, record_summaries)
    _apply_towers(results)     process the gradients and apply them; returns the step's output

How it is built is fixed by the trainer's :class:`~trainstack.towers.StepOptions` (XLA, steps per
call, gradient accumulation, loss scaling, the non-finite policy).
"""
from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import tensorflow as tf

from trainstack.callbacks import SummaryCollection, summary_collection_scope
from trainstack.inputs import InputSource

from ..tower.context import TowerContext
from ..tower.eager import runs_eagerly
from ..tower.gradproc import FilterNoneGrad, GradientProcessor, check_optimizer, unwrap_optimizer
from ..tower.model_desc import tower_func_of
from ..tower.owner import frozen_variable_ids
from ..tower.step import TracedStep
from ..tower.tower import TowerFunc
from ..tower.variable_creation import create_variables_outside_function, trace_creating_variables
from .loss_scaling import loss_scale_optimizer
from .nonfinite import NonFiniteCheck, apply_if_finite
from .prefetch import OverlappedSteps
from .step_options import StepOption, StepOptions, resolve_step_options
from .tower_result import TowerResult, average_micro_batches, check_cost, on_device
from .tower_summaries import TowerSummaries
from .tower_trainer import TowerTrainer

__all__ = ["SingleCostTrainer"]

logger = logging.getLogger("trainstack.towers")


class SingleCostTrainer(TowerTrainer):
    """Minimizes the cost a tower function returns; see the module docstring.

    ``options``: the step's :class:`~trainstack.towers.StepOptions`; each of its fields may also
    be given as a keyword argument (``SingleCostTrainer(xla_compile=True)``), checked by it. The
    trainer reads them as attributes (``trainer.steps_per_run``), which cannot be set.

    Non-finite values: every step records, in the graph, the first global step whose loss or
    gradients were not finite and which tensor it was (the loss by its name, or the variable
    whose gradient was); the savers' refusal to save NaN weights and ``TerminateOnNaN`` name them.
    A run they stop for NaN ends, once every callback's ``after_train`` has run (checkpoints and
    stats flushed), with ``NonFiniteError``, so the program exits with an error status;
    ``TrainConfig(on_nonfinite="stop")`` ends it quietly instead. ``record_nonfinite="loss"``
    records only the loss (a NaN gradient under a finite loss is then reported at the next step,
    by the loss), False nothing; ``skip_nonfinite_steps=True`` skips such a step (nonfinite.py).
    """

    #: whether the step computes and applies gradients (NoOpTrainer: no)
    _trains = True
    #: step options this trainer does not support: name -> why (an error names it when set)
    unsupported_options: ClassVar[Mapping[str, str]] = {}

    steps_per_run = StepOption()
    xla_compile = StepOption()
    gradient_accumulation_steps = StepOption()
    mixed_precision = StepOption()
    skip_nonfinite_steps = StepOption()
    record_nonfinite = StepOption()
    gpu_prefetch = StepOption()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        shadowed = [n for n in StepOptions.names() if n in vars(cls) and not isinstance(vars(cls)[n], StepOption)]
        if shadowed:
            raise TypeError(f"{cls.__name__} sets the step option(s) {shadowed} as class attributes; step "
                            "options are given when the trainer is made: pass them to super().__init__("
                            "options=StepOptions(...)) or as keyword arguments")

    def __init__(self, config: Any = None, *, options: StepOptions | None = None, **step_options: Any) -> None:
        #: how the step is built and run, fixed here (see StepOptions)
        self.options: StepOptions = resolve_step_options(type(self).__name__, options, step_options,
                                                          self.unsupported_options)
        self._nonfinite: NonFiniteCheck | None = None
        self.train_op: TracedStep | None = None
        self._grad_processors: list[GradientProcessor] = []
        self._trainable: list[tf.Variable] = []
        #: while the step's first trace creates the model's variables (see _variables_in_step)
        self._creating_variables = False
        self._filter_none = FilterNoneGrad()
        #: while the towers of a step of several towers are traced: what gathers their summaries
        self._towers_summaries: TowerSummaries | None = None
        super().__init__(config)

    @property
    def num_towers(self) -> int:
        """Training towers per step; each takes its own batch from the InputSource."""
        return 1

    def _tower_device(self, index: int) -> str | None:
        """The device of training tower ``index`` (None: TensorFlow's placement)."""
        return None

    @property
    def trainable_variables(self) -> list[tf.Variable]:
        """The variables the step trains: the trainable ones the cost reads (found while the
        first tower was built; Keras layers frozen with ``trainable = False`` excluded)."""
        return list(self._trainable)

    # -- setup -----------------------------------------------------------------------------------------
    @runs_eagerly
    def setup_graph(self, input_signature: Sequence[tf.TensorSpec], input: Any,
                    get_cost_fn: Callable[..., Any], get_opt_fn: Callable[[], Any] | None) -> None:
        """Build the trainer's step.

        ``input_signature``: named ``tf.TensorSpec``s of the tower function's
        inputs; ``input``: an InputSource (what else a trainer accepts, see
        :meth:`_as_input_source`); ``get_cost_fn(*inputs) -> cost``: the tower
        function; ``get_opt_fn() -> optimizer``: a Keras optimizer, possibly
        wrapped by ``apply_grad_processors``.
        """
        if self.train_op is not None:
            raise RuntimeError(f"{type(self).__name__}.setup_graph() was already called")
        signature = self.setup_input(input_signature, self._as_input_source(input),
                                     self.num_towers * self.gradient_accumulation_steps)
        if isinstance(get_cost_fn, TowerFunc) and tuple(get_cost_fn.input_signature) != signature:
            raise ValueError(f"the TowerFunc's input signature {list(get_cost_fn.input_signature)} "
                             f"differs from input_signature {list(signature)}")
        self.tower_func = tower_func_of(get_cost_fn, signature, self.tower_func_class)
        if get_opt_fn is not None:
            with self._outside_tower():
                opt = self._adapt_optimizer(get_opt_fn())
            check_optimizer(opt, "get_opt_fn()")
            self._optimizer, self._grad_processors = unwrap_optimizer(opt)
            if self.mixed_precision:
                self._optimizer = loss_scale_optimizer(self._optimizer, type(self).__name__,
                                                      bool(self._grad_processors))
        elif self._trains:
            raise TypeError(f"{type(self).__name__}.setup_graph() needs get_opt_fn, a function "
                            "returning the optimizer")
        self._creating_variables = self._variables_in_step()
        if not self._creating_variables:
            self._build_variables()
            if self._trains and not self._optimizer.built:
                self._optimizer.build(self._trainable)
        if self._trains and (self.skip_nonfinite_steps or self.record_nonfinite):
            # with loss scaling, overflowing gradients are the LossScaleOptimizer's to handle
            gradients = self.skip_nonfinite_steps or self.record_nonfinite != "loss"
            self._nonfinite = NonFiniteCheck(self.summary_collection,
                                             check_gradients=gradients and not self.mixed_precision,
                                             skip=self.skip_nonfinite_steps)
            self.register_callback(self._nonfinite.callback())
        step = TracedStep(self._step_body, self.input.feed_signature(), name="train_step",
                          multi_step=self.steps_per_run > 1)
        try:
            step.trace(())
        finally:
            self._creating_variables = False
        self.train_op = step   # set up only once traced: a failed trace leaves the trainer as it was
        prefetch = self.input.prefetcher()
        if prefetch is not None:
            self.register_callback(OverlappedSteps(self.train_op, prefetch))

    def _as_input_source(self, input: Any) -> InputSource:
        """The InputSource to use for ``input``; subclasses wrap dataflows."""
        if not isinstance(input, InputSource):
            raise TypeError(f"{type(self).__name__}.setup_graph() takes an InputSource as input, got "
                            f"{input!r} ({type(input).__name__}); wrap a dataflow in FeedInput or "
                            "QueueInput, or use SimpleTrainer (which feeds one)")
        return input

    def _variables_in_step(self) -> bool:
        """Hook: whether the step's first trace creates the model's variables, so that the model
        is traced once. True for one tower without XLA (whose compiled function cannot create
        them); a trainer that places or mirrors its variables returns False, and they are made
        first by :meth:`_build_variables`, in a trace of their own."""
        return self.num_towers == 1 and not self.xla_compile

    def _build_variables(self) -> None:
        """Trace the first training tower once, so that the model's variables exist, and find
        the trainable variables its cost reads."""
        found: list[tf.Variable] = []

        def build(feeds: Any) -> tf.Tensor:
            inputs = self._get_tower_inputs(feeds)[0]
            with on_device(self._tower_device(0)), summary_collection_scope(None):
                with TowerContext("tower0", is_training=True, index=0, cross_worker_mean=self._worker_mean()):
                    with tf.GradientTape() as tape:
                        cost = self.tower_func(*inputs)
            found[:] = tape.watched_variables()
            return check_cost(cost, self.tower_func)

        trace_creating_variables(build, [self.input.feed_signature()], type(self).__name__)
        self._set_trainable(found)

    def _set_trainable(self, watched: Sequence[tf.Variable]) -> None:
        """The variables the step trains: those of ``watched`` (what the first tower's cost
        read) that are trainable and not frozen."""
        frozen = frozen_variable_ids(self.tower_func.model_owner)
        self._trainable = [v for v in watched if v.trainable and id(v) not in frozen]
        if self._trains and not self._trainable:
            raise ValueError(f"the cost of tower function {self.tower_func!r} depends on no trainable "
                             "variable: there is nothing to train")

    # -- one step --------------------------------------------------------------------------------
    def run_step(self) -> None:
        if getattr(self.train_op, "multi_step", False):  # a TracedStep making several steps per call
            self.hooked_run(self.train_op, self.loop.run_size)  # type: ignore[arg-type]  # a TracedStep
        else:
            super().run_step()

    def _step_body(self, feeds: Any, fetch_names: tuple[str, ...],
                   steps: tf.Tensor | None = None) -> tuple[Any, dict[str, Any]]:
        """One call of the traced step: ``steps - 1`` steps in a graph loop (when ``steps`` is
        given), then the step whose output and fetches the call returns.

        In the loop each step reads the next step's batch while it computes (as Keras'
        ``steps_per_execution`` loop does): the read and the step touch different resources,
        so the graph runs them side by side. A call still reads exactly ``steps`` batches."""
        creating = (tf.variable_creator_scope(create_variables_outside_function(type(self).__name__, strict=False))
                    if self._creating_variables else contextlib.nullcontext())
        with creating:
            inputs = self._get_tower_inputs(feeds)
            if steps is not None:
                def body(i: tf.Tensor, inputs: list[list[tf.Tensor]]) -> tuple[tf.Tensor, list[list[tf.Tensor]]]:
                    self._compute_step(inputs, ())
                    self._in_graph_step_done()
                    return i + 1, self._get_tower_inputs(feeds)

                _, inputs = tf.while_loop(lambda i, _: i < steps - 1, body, [tf.constant(0), inputs])
            return self._compute_step(inputs, fetch_names)

    def _in_graph_step_done(self) -> None:
        """Hook: called while a call of several steps (``steps_per_run > 1``) is traced, after
        each step of its graph loop but the last (the loop's callbacks follow that one): a
        subclass adds graph ops that advance its own per-step state. The default adds none."""

    def _compute_step(self, tower_inputs: list[list[tf.Tensor]],
                      fetch_names: tuple[str, ...]) -> tuple[Any, dict[str, Any]]:
        compute = functools.partial(self._compute, fetch_names=fetch_names)
        if self.xla_compile:
            compute = tf.function(compute, jit_compile=True)
        return compute(tower_inputs)

    def _get_tower_inputs(self, feeds: Any) -> list[list[tf.Tensor]]:
        """One step's input tensors, read with the traced ``feeds``: one list per tower and
        micro-batch, micro-batch-major: micro-batch ``m`` of tower ``k`` is item
        ``m * num_towers + k`` (the input's order)."""
        inputs = []
        with self.input.tracing(feeds):
            for m in range(self.gradient_accumulation_steps):
                for k in range(self.num_towers):
                    with on_device(self._tower_device(k)):
                        inputs.append(self.input.get_input_tensors(m * self.num_towers + k))
        return inputs

    def _compute(self, tower_inputs: list[list[tf.Tensor]],
                 fetch_names: tuple[str, ...]) -> tuple[Any, dict[str, Any]]:
        k = self.num_towers
        micro = [tower_inputs[i:i + k] for i in range(0, len(tower_inputs), k)]
        per_micro = []
        # summaries are recorded once per step, by the last micro-batch's towers: the moving
        # averages take the mean of the towers' values, the other summaries the main tower's
        gathered = TowerSummaries(self._step_summaries()) if len(micro[-1]) > 1 else None
        for m, inputs in enumerate(micro):
            last = m == len(micro) - 1
            self._towers_summaries = gathered if last else None
            try:
                per_micro.append(self._build_towers(inputs, record_summaries=last))
            finally:
                self._towers_summaries = None
        if gathered is not None:
            gathered.flush()
        named = per_micro[0][0].cost  # the cost as the tower function named it (averaging renames it)
        results = average_micro_batches(per_micro) if len(per_micro) > 1 else per_micro[0]
        check = self._nonfinite
        if check is not None:
            check.begin([r.cost for r in results], named)
        with summary_collection_scope(self._step_summaries()):
            output = self._apply_towers(results)
        if check is not None:
            check.end()
        main = results[0].handle
        return output, {name: main.get_tensor(name) for name in fetch_names}

    def _build_towers(self, tower_inputs: list[list[tf.Tensor]],
                      record_summaries: bool = True) -> list[TowerResult]:
        return [self._build_tower(k, inputs, record_summaries) for k, inputs in enumerate(tower_inputs)]

    def _build_tower(self, index: int, inputs: Sequence[tf.Tensor],
                     record_summaries: bool = True) -> TowerResult:
        """Build training tower ``index`` on its device: its cost and its gradients. With
        ``record_summaries`` it records its summaries: in a step of several towers every tower
        does, into what averages their moving summaries (see tower_summaries.py); else the main
        tower alone, into the trainer's collection."""
        gathered = self._towers_summaries
        if not record_summaries:
            collection = None
        elif gathered is not None:
            collection = gathered.tower(index)
        else:
            collection = self._step_summaries() if index == 0 else None
        with on_device(self._tower_device(index)), summary_collection_scope(collection):
            with TowerContext(f"tower{index}", is_training=True, index=index,
                              cross_worker_mean=self._worker_mean()) as ctx:
                with tf.GradientTape() as tape:
                    cost = check_cost(self.tower_func(*inputs), self.tower_func)
                    # with loss scaling, differentiate the scaled cost (in the tape);
                    # the LossScaleOptimizer unscales the gradients when it applies them
                    target = self._optimizer.scale_loss(cost) if self.mixed_precision else cost
                grads = self._compute_gradients(tape, target)
        return TowerResult(cost, grads, self.tower_func.towers[ctx.name])

    def _worker_mean(self) -> Callable[[Sequence[tf.Tensor]], list[tf.Tensor]] | None:
        """What the training towers get as ``TowerContext.cross_worker_mean``: None (one process);
        a trainer with worker processes returns its mean over them (``HorovodTrainer``)."""
        return None

    def _compute_gradients(self, tape: tf.GradientTape, cost: tf.Tensor) -> list:
        if self._creating_variables and not self._trainable:  # the first tower of the first trace
            self._set_trainable(tape.watched_variables())
            if self._trains and not self._optimizer.built:
                with tf.init_scope():
                    self._optimizer.build(self._trainable)
        if not self._trains:
            return []
        grads = tape.gradient(cost, self._trainable)
        return list(zip(grads, self._trainable))

    def _apply_towers(self, results: list[TowerResult]) -> Any:
        """Process and apply the gradients; return the step's output (the main tower's cost)."""
        if self._trains:
            self._apply_gradients(results[0].grads_and_vars)
        return results[0].cost

    def _apply_gradients(self, grads_and_vars: list) -> None:
        grads_and_vars = self._filter_none.process(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("no trainable variable has a gradient: the cost does not depend on any")
        for proc in self._grad_processors:
            grads_and_vars = proc.process(grads_and_vars)
        finite = self._nonfinite.gradients(grads_and_vars) if self._nonfinite is not None else None
        if self.skip_nonfinite_steps and finite is not None:
            apply_if_finite(self._optimizer, grads_and_vars, finite)
        else:
            self._optimizer.apply_gradients(grads_and_vars)

    def _step_summaries(self) -> SummaryCollection:
        """Where the step records its summaries: the trainer's collection (with
        ``skip_nonfinite_steps``, through the check that keeps a skipped step's loss out of the
        moving averages)."""
        return self._nonfinite.summaries if self._nonfinite is not None else self.summary_collection

    def first_nonfinite(self) -> tuple[int, str] | None:
        """``(global step, what)`` of the first step of this run whose loss or gradients were
        NaN or infinite, read from the step's in-graph record (see nonfinite.py); None when
        there was none, or without a record (``record_nonfinite = False``)."""
        return self._nonfinite.first() if self._nonfinite is not None else None
