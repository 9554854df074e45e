# Over 400 lines on purpose: one build sequence (setup_input .. _apply_towers) that subclasses override.
"""TowerTrainer and SingleCostTrainer: trainers that build their step from a tower function.

:class:`TowerTrainer` knows the model's tower function: it builds
predictors (inference towers) from it and names what a checkpoint holds.
:class:`SingleCostTrainer` builds the training step for a single-cost model::

    trainer.setup_graph(model.get_input_signature(), QueueInput(df),
                        model.build_graph, model.get_optimizer)
    trainer.train_with_defaults(callbacks=[ModelSaver()], max_epoch=10)

``setup_graph`` sets up the InputSource, registers its callbacks, creates
the model's variables (the first build of tower ``tower0``), builds the
optimizer's slots, and traces the step: after it every variable exists and
the graph is frozen (see :mod:`trainstack.towers.tower.step`). The step is a
:class:`~trainstack.towers.tower.step.TracedStep`: callbacks fetch tensors by their
names inside the main training tower in the same call as the training step.

How one step is built (the hooks subclasses override, e.g. multi-device
trainers that build ``num_towers`` towers on several devices)::

    _get_tower_inputs(feeds)   one list of input tensors per tower (under each tower's device)
    _build_towers(inputs, record_summaries) -> [TowerResult(cost, grads_and_vars, handle)]
                               via _build_tower(k, inputs, record_summaries)
    _apply_towers(results)     process the gradients and apply them; returns the step's output

With ``xla_compile`` (class attribute or constructor argument) the towers and
the update are compiled with XLA (``tf.function(jit_compile=True)``); the
input stays outside the compiled part, so queue-fed inputs still work.
"""
from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager as ContextManager
from typing import Any, NamedTuple

import keras
import tensorflow as tf

from trainstack.callbacks import (
    DEFAULT_CALLBACKS,
    DEFAULT_MONITORS,
    SummaryCollection,
    default_summary_collection,
    summary_collection_scope,
)
from trainstack.callbacks.checkpoint_layout import SAVER_KEYS
from trainstack.inputs import InputSource, QueueInput, normalize_signature
from trainstack.loop import Callback, MonitorBase, Trainer, check_int

from ..predict.predictor import OnlinePredictor, predict_device
from ..tower.eager import runs_eagerly
from ..tower.gradproc import FilterNoneGrad, GradientProcessor, ProcessedOptimizer, check_optimizer, unwrap_optimizer
from ..tower.model_desc import tower_func_of
from ..tower.rng import rng_checkpoint
from ..tower.step import TracedStep
from ..tower.tower import TowerContext, TowerFunc, TowerHandle, _frozen_ids
from ..tower.variable_creation import trace_creating_variables
from .construction import Constructed, own_collection, own_summaries, refuse_config
from .nonfinite import NonFiniteCheck, apply_if_finite
from .tower_summaries import TowerSummaries

__all__ = ["TowerTrainer", "SingleCostTrainer", "TowerResult"]

logger = logging.getLogger("trainstack.towers")


class TowerTrainer(Trainer, metaclass=Constructed):
    """A trainer whose model is a :class:`TowerFunc` (``trainer.tower_func``).

    Its hooks (template methods with plain TensorFlow 2 defaults; ``trainstack.tensorpack``'s
    trainers override them for tensorpack's TF1 scripts):

    - :meth:`_constructing`: entered around the whole construction ``Trainer(...)`` (its
      metaclass :class:`Constructed` does it): the trainer's summary collection records there;
    - :meth:`_outside_tower`: entered around model code the trainer calls outside a tower (the
      optimizer function);
    - :meth:`_adapt_optimizer`: what the trainer makes of the optimizer the model gives;
    - ``tower_func_class``: the TowerFunc class for a plain function given as the tower function
      (a model's ``build_graph`` gets its model's, :attr:`ModelDescBase.tower_func_class`);
    - ``implicit_callbacks()`` (the loop's hook) and :meth:`default_input`.

    A TrainConfig as first argument (tensorpack 003's ``SimpleTrainer(config)``) is a TypeError:
    use ``launch_train_with_config(config, SimpleTrainer())``, or ``trainstack.tensorpack``'s
    trainers, which keep the older forms.
    """

    stop_exceptions = (tf.errors.OutOfRangeError,)

    #: the TowerFunc class made for a plain function given as the tower function
    tower_func_class: type[TowerFunc] = TowerFunc

    def __init__(self, config: Any = None) -> None:
        refuse_config(self, config)
        super().__init__()
        self._tower_func: TowerFunc | None = None
        self._input: InputSource | None = None
        self._optimizer: Any = None
        #: Keras optimizers the trainer uses besides ``_optimizer`` (see ``checkpoint_objects``)
        self._optimizers: list[Any] = []
        self._rng: Any = None  # see checkpoint_objects: the model's SeedGenerator states, or False
        #: what declare_checkpoint_objects declared (kept if a subclass declared before this ran)
        self._declared_objects: dict[str, Any] = self.__dict__.get("_declared_objects", {})
        #: where the step records its summaries (MovingAverageSummary reads it); made before
        #: __init__ runs (see _constructing), which records into it
        self.summary_collection: SummaryCollection = own_collection(self)
        self._predictors: dict[tuple, OnlinePredictor] = {}

    # -- hooks -----------------------------------------------------------------------------------
    def _constructing(self) -> ContextManager[Any]:
        """Hook: entered around the trainer's whole construction (``__init__``, its subclasses'
        included). The default records summaries into the trainer's collection (unless a scope
        chose another), so that the steps a custom trainer builds in ``__init__`` report to its
        callbacks. An override enters ``super()._constructing()`` too."""
        return own_summaries(self)

    def _outside_tower(self) -> ContextManager[Any]:
        """Hook: entered around model code the trainer calls outside any tower (the optimizer
        function of ``setup_graph``). The default enters nothing."""
        return contextlib.nullcontext()

    def _adapt_optimizer(self, optimizer: Any) -> Any:
        """Hook: the optimizer the trainer uses for ``optimizer``, what the model gave. The
        default returns it unchanged (a Keras optimizer, possibly wrapped by
        ``apply_grad_processors``, is checked afterwards; a TF1 ``tf.compat.v1.train`` optimizer
        is refused there with the Keras optimizer to use)."""
        return optimizer

    def default_input(self, dataflow: Any) -> InputSource:
        """Hook: the InputSource ``launch_train_with_config`` makes for a dataflow given to this
        trainer (before any StagingInput): a ``QueueInput``, whose thread prepares the next
        batches while the step runs. :class:`SimpleTrainer` feeds instead."""
        return QueueInput(dataflow)

    # -- the model -------------------------------------------------------------------------------
    @property
    def tower_func(self) -> TowerFunc:
        if self._tower_func is None:
            raise AttributeError(f"{type(self).__name__} has no tower function yet: call setup_graph() "
                                 "or set trainer.tower_func")
        return self._tower_func

    @tower_func.setter
    def tower_func(self, func: TowerFunc) -> None:
        if not isinstance(func, TowerFunc):
            raise TypeError(f"trainer.tower_func must be a TowerFunc (TowerFunc(fn, input_signature)), "
                            f"got {func!r}")
        self._tower_func = func

    @property
    def input_signature(self) -> tuple[tf.TensorSpec, ...]:
        """The input signature of the tower function."""
        return self.tower_func.input_signature

    @property
    def input(self) -> InputSource:
        """The InputSource the trainer takes its inputs from (after setup_graph or setup_input)."""
        if self._input is None:
            raise AttributeError(f"{type(self).__name__} has no InputSource yet: call setup_graph() (or, "
                                 "in a trainer that builds its own graph, setup_input()) first")
        return self._input

    @runs_eagerly
    def setup_input(self, input_signature: Sequence[tf.TensorSpec], source: InputSource,
                    num_towers: int = 1) -> tuple[tf.TensorSpec, ...]:
        """Set ``source`` up to feed ``num_towers`` towers and register its callbacks; return
        the normalized signature. The first step of building a graph: ``setup_graph`` does it,
        a trainer that builds its own (several steps, as a GAN's) calls it itself."""
        if self._input is not None:
            raise RuntimeError(f"{type(self).__name__} already has an InputSource ({self._input!r})")
        signature = normalize_signature(input_signature)
        source.setup(signature, num_towers=num_towers)
        for cb in source.get_callbacks():
            Trainer.register_callback(self, cb)
        self._input = source
        return signature

    def register_callback(self, cb: Callback | Sequence[Callback]) -> Any:
        """Add a callback, or a list of them (tensorpack's ``self.register_callback(
        input.setup(signature))``). The callbacks of an InputSource also tell the trainer its
        input (``trainer.input``), when it has none yet."""
        if isinstance(cb, (list, tuple)):
            return [self.register_callback(c) for c in cb]
        source = getattr(cb, "source", None)
        if isinstance(source, InputSource) and self._input is None:
            self._input = source
        return super().register_callback(cb)

    @property
    def optimizer(self) -> Any:
        """The Keras optimizer (unwrapped from apply_grad_processors); None before setup."""
        return self._optimizer

    def register_optimizer(self, optimizer: Any) -> None:
        """Have ``checkpoint_objects`` hold ``optimizer``, a Keras optimizer the trainer uses, as
        ``optimizer`` (``optimizer_1``, ... after the first); the TF1 room's recording of a custom
        trainer's ``minimize`` calls registers theirs. To choose the key, use
        :meth:`declare_checkpoint_objects`."""
        optimizer = unwrap_optimizer(self._adapt_optimizer(optimizer))[0]
        if optimizer is not self._optimizer and all(o is not optimizer for o in self._optimizers):
            self._optimizers.append(optimizer)

    def declare_checkpoint_objects(self, objects: Mapping[str, Any] | None = None, **named: Any) -> None:
        """Declare what the trainer's checkpoints hold besides the model: ``key -> trackable``
        (a Keras optimizer, also wrapped by ``apply_grad_processors``; a ``tf.Variable`` or
        ``tf.Module``), as a dict and/or keyword arguments. A custom trainer calls it in its
        ``__init__``, e.g. for a GAN's two optimizers::

            self.d_opt, self.g_opt = model.optimizers()
            self.declare_checkpoint_objects(d_optimizer=self.d_opt, g_optimizer=self.g_opt)

        The keys are the checkpoint's (``d_optimizer/...``) whatever the attributes holding
        the objects are called, so renaming an attribute keeps the checkpoint. ``model`` and
        ``rng`` are the model's (declared by its owner: ``ModelDesc.checkpoint_objects()``,
        ``TowerFunc(owner=...)``) and the savers' keys are reserved. A later call adds keys
        (or replaces those it repeats). See :attr:`checkpoint_objects`."""
        items = {**(dict(objects) if objects is not None else {}), **named}
        who = f"{type(self).__name__}.declare_checkpoint_objects()"
        checked = {}
        for key, obj in items.items():
            if not isinstance(key, str) or not key:
                raise TypeError(f"{who}: keys must be non-empty strings, got {key!r}")
            if key in ("model", "rng") or key in SAVER_KEYS:
                raise ValueError(f"{who}: key {key!r} is reserved ('model' and 'rng' are the model's, declared "
                                 "by its owner: ModelDesc.checkpoint_objects() or TowerFunc(owner=...); "
                                 f"{sorted(SAVER_KEYS)} are the savers'); choose another")
            obj = unwrap_optimizer(self._adapt_optimizer(obj))[0]  # the Keras optimizer (of a wrapper)
            if not isinstance(obj, tf.__internal__.tracking.Trackable):
                raise TypeError(f"{who}: {key}={obj!r:.80} is {type(obj).__name__}, which a checkpoint "
                                "cannot hold; expected a Keras optimizer, a tf.Variable or a tf.Module")
            checked[key] = obj
        self.__dict__.setdefault("_declared_objects", {}).update(checked)

    @property
    def optimizers(self) -> dict[str, Any]:
        """Every Keras optimizer the trainer checkpoints, by checkpoint key: those declared
        with :meth:`declare_checkpoint_objects`, by their declared keys; ``optimizer`` (the one
        ``setup_graph`` made); then, the fallback, the trainer's attributes holding optimizers
        nothing declared (also wrapped by ``apply_grad_processors``, or in lists and dicts), by
        attribute name without leading underscores (``d_opt``, ``opts_0``), logged once with
        how to declare them; then those :func:`minimize` used, as ``optimizer``,
        ``optimizer_1``, ... ."""
        found: dict[str, Any] = {}
        seen: set[int] = set()
        declared = self.__dict__.get("_declared_objects", {})
        for key, obj in declared.items():
            if isinstance(obj, keras.optimizers.Optimizer):
                found[key] = obj
                seen.add(id(obj))
        reserved = {"model", "rng", *declared}

        def add(key: str, opt: Any) -> str | None:
            if id(opt) in seen:
                return None
            seen.add(id(opt))
            base, n = key, 1
            while key in found or key in reserved:
                key, n = f"{base}_{n}", n + 1
            found[key] = opt
            return key

        if self._optimizer is not None:
            add("optimizer", self._optimizer)
        guessed: list[tuple[str, str]] = []
        for name, value in vars(self).items():
            if name in _NOT_SCANNED:
                continue
            for key, opt in _optimizers_in(name.lstrip("_") or name, value):
                chosen = add(key, opt)
                if chosen is not None:
                    guessed.append((chosen, name))
        for opt in self._optimizers:
            add("optimizer", opt)
        if guessed:
            self._log_guessed_optimizers(tuple(guessed))
        return found

    def _log_guessed_optimizers(self, guessed: tuple[tuple[str, str], ...]) -> None:
        """The fallback's one log line (per set of keys): the keys it chose and how to declare them."""
        if self.__dict__.get("_guessed_optimizers_logged") == guessed:
            return
        self.__dict__["_guessed_optimizers_logged"] = guessed
        logger.warning(
            "%s declares no checkpoint keys for optimizers it holds, so their keys were taken from the "
            "names of the attributes holding them: %s. Renaming such an attribute changes the checkpoint, "
            "and resuming from an older one then fails. Declare them in __init__: "
            "self.declare_checkpoint_objects(%s).", type(self).__name__,
            ", ".join(f"{key} (self.{name})" for key, name in guessed),
            ", ".join(f"{key}=self.{name}" for key, name in guessed))

    @property
    def checkpoint_objects(self) -> dict[str, Any]:
        """What a checkpoint holds, as its owners declare it: ``model`` (the tower function's
        :attr:`~TowerFunc.checkpoint_module`, keyed as the model's owner declares:
        ``ModelDesc.checkpoint_objects()``, ``TowerFunc(owner=...)``); what the trainer
        declared with :meth:`declare_checkpoint_objects`; every optimizer of
        :attr:`optimizers` (``optimizer`` for the one ``setup_graph`` made; optimizers held in
        attributes nothing declared are found as a fallback, logged once), so that
        ``ModelSaver`` saves the optimizers' state of a custom trainer (a GAN's two); and
        ``rng``, the state of the model's random generators (dropout masks; see rng.py), when
        it has any, so that a resumed run draws what an uninterrupted one would.

        A subclass may also override this property and return the whole dict itself."""
        if self._tower_func is None:
            raise RuntimeError(f"{type(self).__name__}.checkpoint_objects exists after setup_graph(): "
                               "the model's variables are created there")
        objects: dict[str, Any] = {"model": self._tower_func.checkpoint_module}
        objects.update(self.optimizers)
        for key, obj in self.__dict__.get("_declared_objects", {}).items():
            objects.setdefault(key, obj)
        if self._rng is None:
            self._rng = rng_checkpoint(self._tower_func.model_owner) or False
        if self._rng:
            objects["rng"] = self._rng
        return objects

    # -- predictors ---------------------------------------------------------------------------------
    def get_predictor(self, input_names: Sequence[str], output_names: Sequence[str],
                      device: int = 0) -> OnlinePredictor:
        """An :class:`OnlinePredictor` of an inference tower ``predict_tower<device>`` on GPU
        ``device`` (the CPU when there is no GPU). Built once per device and names."""
        key = (device, tuple([input_names] if isinstance(input_names, str) else input_names),
               tuple([output_names] if isinstance(output_names, str) else output_names))
        predictor = self._predictors.get(key)
        if predictor is None:
            predictor = OnlinePredictor(self.tower_func, input_names, output_names,
                                        tower_name=f"predict_tower{device}", device=predict_device(device),
                                        index=device)
            self._predictors[key] = predictor
        return predictor

    def get_predictors(self, input_names: Sequence[str], output_names: Sequence[str],
                       n: int) -> list[OnlinePredictor]:
        """``n`` predictors, on devices ``0 .. n-1``."""
        n = check_int(f"{type(self).__name__}.get_predictors", "n", n, minimum=1)
        return [self.get_predictor(input_names, output_names, device=k) for k in range(n)]

    # -- running ---------------------------------------------------------------------------------------
    def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        before = len(_DEFAULT_SUMMARIES)
        output = super().run(fn, *args)
        if len(_DEFAULT_SUMMARIES) > before or getattr(fn, "default_summaries", None):
            self._refuse_default_summaries(fn, before)
        return output

    def hooked_run(self, fn: Callable[..., Any], *args: Any) -> Any:
        before = len(_DEFAULT_SUMMARIES)
        output = super().hooked_run(fn, *args)
        if len(_DEFAULT_SUMMARIES) > before or getattr(fn, "default_summaries", None):
            self._refuse_default_summaries(fn, before)
        return output

    def _refuse_default_summaries(self, fn: Any, before: int) -> None:
        """A step recorded summaries into the process-wide default collection, which this
        trainer's callbacks do not read (they read ``summary_collection``): an error rather than
        summaries lost without a word."""
        names = list(dict.fromkeys([*getattr(fn, "default_summaries", ()), *_DEFAULT_SUMMARIES.names[before:]]))
        name = type(self).__name__
        raise RuntimeError(
            f"{name}: the step {getattr(fn, 'name', None) or fn!r} recorded the summaries {names} into "
            f"the process-wide default collection, which {name} does not report (its callbacks read "
            "trainer.summary_collection): they would be lost. The trainer's collection records by "
            f"default in {name}.__init__: make and trace the step there (TracedStep(...).trace()), or "
            "record under `with summary_collection_scope(trainer.summary_collection):` in the step")

    def _initialize(self, session_init: Any = None, **kwargs: Any) -> None:
        """Initialize the model's variables from ``session_init`` (see ``sessinit.SmartInit``:
        a checkpoint path, a dict of arrays, a SessionInit, ...); None keeps them as they are."""
        if kwargs:
            raise TypeError(f"{type(self).__name__}.initialize() got unexpected arguments {sorted(kwargs)}; "
                            "it takes session_init")
        if session_init is not None:
            from ..session.sessinit import SmartInit
            SmartInit(session_init).init(self)

    @runs_eagerly
    def train(self, *args: Any, **kwargs: Any) -> None:
        """The loop's ``train(callbacks, monitors, steps_per_epoch, ...)``."""
        if not args and not kwargs:
            raise TypeError(f"{type(self).__name__}.train() needs callbacks, monitors and steps_per_epoch; "
                            "or use train_with_defaults(...) or launch_train_with_config(config, trainer)")
        return super().train(*args, **kwargs)

    def default_extra_callbacks(self) -> list[Callback]:
        return DEFAULT_CALLBACKS()

    def default_monitors(self) -> list[MonitorBase]:
        return DEFAULT_MONITORS()

    @property
    def num_towers(self) -> int:
        """Training towers per step, each on its own batch: 1, K on the multi-GPU trainers."""
        return 1

    def _default_steps_per_epoch(self) -> int:
        steps = self.input.size()
        self.announce_default_epoch(steps)
        return steps

    def announce_default_epoch(self, steps_per_epoch: int) -> None:
        """Warn, when a step takes a batch per tower, that the default ``steps_per_epoch`` (one
        step per batch of the input, tensorpack's rule) makes an epoch K passes over the data,
        and say how to get one pass."""
        k = self.num_towers
        if k > 1:
            logger.warning(
                "%s trains %d towers, each on its own batch: the default steps_per_epoch=%d (the "
                "input's size) makes an epoch %d passes over the data. For one pass per epoch, pass "
                "steps_per_epoch=%d (to TrainConfig or train_with_defaults).",
                type(self).__name__, k, steps_per_epoch, k, max(1, steps_per_epoch // k))


class TowerResult(NamedTuple):
    """What building one training tower gives: its cost, its gradients and its handle."""

    cost: tf.Tensor
    grads_and_vars: list
    handle: TowerHandle


class SingleCostTrainer(TowerTrainer):
    """Minimizes the cost a tower function returns; see the module docstring.

    ``xla_compile``: compile the towers and the update with XLA.
    ``steps_per_run``: steps made by one call of the traced step (a loop in the
    graph over the input; feedfree inputs only, FeedInput brings it back to
    1): ``global_step`` and the progress bar advance by that many per call,
    epochs stay exact (the last call of an epoch is shorter), and callbacks'
    per-step hooks run once per call, their fetches taken from its last step.
    ``mixed_precision``: loss scaling for a model that computes in float16 (set
    ``keras.config.set_dtype_policy("mixed_float16")`` before creating its
    layers: their variables stay float32): the optimizer is wrapped in a
    ``keras.optimizers.LossScaleOptimizer``, the gradients are those of the
    scaled cost, and a step whose gradients overflow is skipped while the scale
    shrinks (Keras' dynamic loss scaling).
    ``gradient_accumulation_steps``: each step takes that many micro-batches per
    tower from the input (in its order: micro-batch ``m`` of tower ``k`` is
    ``m * num_towers + k``), averages their gradients and applies them once, as
    one step on the micro-batches concatenated would (mean losses, equal sizes).
    ``skip_nonfinite_steps``: a step whose loss or gradients hold a NaN or an Inf
    changes nothing (weights, optimizer state, the moving averages of
    ``add_moving_summary``) and is logged with its global step and the tensor (see
    nonfinite.py), instead of writing the NaN into the weights.

    Non-finite values, with or without it: every step records, in the graph, the first
    global step whose loss or gradients were not finite and which tensor it was (the loss
    by its name, or the variable whose gradient was); the savers' refusal to save NaN
    weights and ``TerminateOnNaN`` name them. A run they stop for NaN ends, once every
    callback's ``after_train`` has run (checkpoints and stats flushed), with
    ``NonFiniteError``, so the program exits with an error status;
    ``TrainConfig(on_nonfinite="stop")`` (``train_with_defaults(on_nonfinite="stop")``)
    ends it quietly instead. The record's cost (benchmarks/nonfinite_overhead.py) is one
    reduction per gradient and a few scalar ops per step; set ``record_nonfinite`` before
    ``setup_graph`` to ``"loss"`` to record only the loss (a NaN gradient under a finite loss
    is then reported at the next step, by the loss) or to False to record nothing.
    """

    #: compile the towers and the update with XLA (``tf.function(jit_compile=True)``)
    xla_compile: bool = False
    #: whether the step computes and applies gradients (NoOpTrainer: no)
    _trains = True
    #: micro-batches per step and tower: their gradients are averaged and applied once
    gradient_accumulation_steps: int = 1
    #: loss scaling for a model computing in float16 under a Keras mixed dtype policy
    mixed_precision: bool = False
    #: skip (do not apply) a step whose loss or gradients are not finite; see nonfinite.py
    skip_nonfinite_steps: bool = False
    #: record in the step where the first non-finite loss or gradient appeared (True), where the
    #: first non-finite loss did ("loss"), or nothing (False); see nonfinite.py
    record_nonfinite: bool | str = True

    def __init__(self, config: Any = None, *, xla_compile: bool | None = None,
                 steps_per_run: int | None = None, gradient_accumulation_steps: int | None = None,
                 mixed_precision: bool | None = None, skip_nonfinite_steps: bool | None = None) -> None:
        if xla_compile is not None:
            self.xla_compile = bool(xla_compile)
        if steps_per_run is not None:
            self.steps_per_run = check_int(type(self).__name__, "steps_per_run", steps_per_run, minimum=1)
        if gradient_accumulation_steps is not None:
            self.gradient_accumulation_steps = check_int(
                type(self).__name__, "gradient_accumulation_steps", gradient_accumulation_steps, minimum=1)
        if mixed_precision is not None:
            self.mixed_precision = bool(mixed_precision)
        if skip_nonfinite_steps is not None:
            self.skip_nonfinite_steps = bool(skip_nonfinite_steps)
        self._nonfinite: NonFiniteCheck | None = None
        self.train_op: TracedStep | None = None
        self._grad_processors: list[GradientProcessor] = []
        self._trainable: list[tf.Variable] = []
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
        if self.record_nonfinite not in (True, False, "loss"):
            raise ValueError(f"{type(self).__name__}.record_nonfinite must be True (the loss and the "
                             "gradients), 'loss' or False (no record), got "
                             f"{self.record_nonfinite!r}")
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
                self._optimizer = self._loss_scale_optimizer(self._optimizer)
        elif self._trains:
            raise TypeError(f"{type(self).__name__}.setup_graph() needs get_opt_fn, a function "
                            "returning the optimizer")
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
        self.train_op = TracedStep(self._step_body, self.input.feed_signature(), name="train_step",
                                   multi_step=self.steps_per_run > 1)
        self.train_op.trace(())
        prefetch = self.input.prefetcher()
        if prefetch is not None:
            self.register_callback(_OverlappedSteps(self.train_op, prefetch))

    def _loss_scale_optimizer(self, optimizer: Any) -> Any:
        """``optimizer`` wrapped for dynamic loss scaling (under the strategy it was made in)."""
        import keras  # noqa: PLC0415

        name = type(self).__name__
        if self._grad_processors:
            raise ValueError(
                f"{name}(mixed_precision=True) with gradient processors: the processors would see "
                "scaled gradients (the LossScaleOptimizer unscales them only when it applies them). "
                "Use the optimizer's own clipnorm/clipvalue, or train without mixed_precision")
        if keras.config.dtype_policy().compute_dtype != "float16":
            raise ValueError(
                f"{name}(mixed_precision=True) scales the loss of a model computing in float16, but the "
                f"Keras dtype policy is {keras.config.dtype_policy().name!r}. Call "
                "keras.config.set_dtype_policy('mixed_float16') before creating the model's layers")
        if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
            return optimizer
        strategy = getattr(optimizer, "_distribution_strategy", None)
        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            return keras.optimizers.LossScaleOptimizer(optimizer)

    def _as_input_source(self, input: Any) -> InputSource:
        """The InputSource to use for ``input``; subclasses wrap dataflows."""
        if not isinstance(input, InputSource):
            raise TypeError(f"{type(self).__name__}.setup_graph() takes an InputSource as input, got "
                            f"{input!r} ({type(input).__name__}); wrap a dataflow in FeedInput or "
                            "QueueInput, or use SimpleTrainer / QueueInputTrainer")
        return input

    def _build_variables(self) -> None:
        """Trace the first training tower once, so that the model's variables exist, and find
        the trainable variables its cost reads."""
        found: list[tf.Variable] = []

        def build(feeds: Any) -> tf.Tensor:
            inputs = self._get_tower_inputs(feeds)[0]
            with _device(self._tower_device(0)), summary_collection_scope(None):
                with TowerContext("tower0", is_training=True, index=0, cross_worker_mean=self._worker_mean()):
                    with tf.GradientTape() as tape:
                        cost = self.tower_func(*inputs)
            found[:] = tape.watched_variables()
            return _check_cost(cost, self.tower_func)

        trace_creating_variables(build, [self.input.feed_signature()], type(self).__name__)
        frozen = _frozen_ids(self.tower_func.model_owner)
        self._trainable = [v for v in found if v.trainable and id(v) not in frozen]
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
            for _ in range(self.gradient_accumulation_steps):
                for k in range(self.num_towers):
                    with _device(self._tower_device(k)):
                        inputs.append(self.input.get_input_tensors())
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
        results = _average_micro_batches(per_micro) if len(per_micro) > 1 else per_micro[0]
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
        with _device(self._tower_device(index)), summary_collection_scope(collection):
            with TowerContext(f"tower{index}", is_training=True, index=index,
                              cross_worker_mean=self._worker_mean()) as ctx:
                with tf.GradientTape() as tape:
                    cost = _check_cost(self.tower_func(*inputs), self.tower_func)
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


#: where summaries go when nothing chose a collection (see TowerTrainer.run)
_DEFAULT_SUMMARIES = default_summary_collection()


#: the trainer's attributes the optimizers' fallback does not scan (they are declared, or bookkeeping)
_NOT_SCANNED = frozenset({"_optimizer", "_optimizers", "_declared_objects", "_guessed_optimizers_logged"})


class _OverlappedSteps(Callback):
    """While training, each step of ``step`` runs ``prefetch`` (the input preparing the next
    step's feeds) while it computes (``TracedStep.while_running``); after training, the step's
    calls are synchronous again and its asynchronous executor is gone."""

    chief_only = False  # every process reads its own input

    def __init__(self, step: TracedStep, prefetch: Callable[[], None]) -> None:
        self.step = step
        self.prefetch = prefetch

    def _before_train(self) -> None:
        self.step.while_running = self.prefetch

    def _after_train(self) -> None:
        self.step.while_running = None
        self.step.close()


def _optimizers_in(key: str, value: Any) -> list[tuple[str, Any]]:
    """(key, Keras optimizer) for the optimizers ``value`` holds (itself, or in a list/dict)."""
    if isinstance(value, ProcessedOptimizer):
        value = value.optimizer
    if isinstance(value, keras.optimizers.Optimizer):
        return [(key, value)]
    if isinstance(value, (list, tuple)):
        return [pair for i, v in enumerate(value) for pair in _optimizers_in(f"{key}_{i}", v)
                if not isinstance(v, (list, tuple, dict))]
    if isinstance(value, dict):
        return [pair for k, v in value.items() if isinstance(k, str) and not isinstance(v, (list, tuple, dict))
                for pair in _optimizers_in(f"{key}_{k}", v)]
    return []


def _average_micro_batches(micro: list[list[TowerResult]]) -> list[TowerResult]:
    """Each tower's result over its micro-batches: the mean cost and the mean gradients (the
    gradient of the mean cost over the micro-batches concatenated, for equal sizes); the last
    micro-batch's handle (what callbacks fetch from)."""
    def mean(grads: list[Any]) -> Any:
        if any(g is None for g in grads):
            return None
        return tf.add_n([tf.convert_to_tensor(g) for g in grads]) / len(grads)

    averaged = []
    for per_micro in zip(*micro):  # one tower, every micro-batch
        grads_and_vars = [(mean([r.grads_and_vars[i][0] for r in per_micro]), v)
                          for i, (_, v) in enumerate(per_micro[0].grads_and_vars)]
        cost = tf.add_n([r.cost for r in per_micro]) / len(per_micro)
        averaged.append(TowerResult(cost, grads_and_vars, per_micro[-1].handle))
    return averaged


def _check_cost(cost: Any, tower_func: TowerFunc) -> tf.Tensor:
    try:
        cost = tf.convert_to_tensor(cost)
    except (TypeError, ValueError) as e:
        raise TypeError(f"tower function {tower_func!r} must return the cost (a scalar tensor), got "
                        f"{cost!r:.80}") from e
    if cost.shape.rank != 0 or not cost.dtype.is_floating:
        raise ValueError(f"tower function {tower_func!r} must return the cost as a floating-point scalar, "
                         f"got dtype {cost.dtype.name} and shape {cost.shape}")
    return cost


def _device(device: str | None) -> Any:
    return tf.device(device) if device else contextlib.nullcontext()
