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
the graph is frozen (see :mod:`trainstack.towers.step`). The step is a
:class:`~trainstack.towers.step.TracedStep`: callbacks fetch tensors by their
names inside the main training tower in the same call as the training step.

How one step is built (the hooks subclasses override, e.g. multi-device
trainers that build ``num_towers`` towers on several devices)::

    _get_tower_inputs()        one list of input tensors per tower (under each tower's device)
    _build_towers(inputs)      -> [TowerResult(cost, grads_and_vars, handle)] via _build_tower(k, ...)
    _apply_towers(results)     process the gradients and apply them; returns the step's output

With ``xla_compile`` (class attribute or constructor argument) the towers and
the update are compiled with XLA (``tf.function(jit_compile=True)``); the
input stays outside the compiled part, so queue-fed inputs still work.
"""
from __future__ import annotations

import contextlib
import functools
import logging
from typing import Any, Callable, NamedTuple, Sequence

import tensorflow as tf

from trainstack.callbacks import (DEFAULT_CALLBACKS, DEFAULT_MONITORS, SummaryCollection,
                                  summary_collection_scope)
from trainstack.inputs import InputSource, normalize_signature
from trainstack.loop import Callback, MonitorBase, Trainer

from .gradproc import FilterNoneGrad, GradientProcessor, check_optimizer, unwrap_optimizer
from .predictor import OnlinePredictor, predict_device
from .step import TracedStep
from .tower import TowerContext, TowerFunc, TowerHandle, _frozen_ids

__all__ = ["TowerTrainer", "SingleCostTrainer", "TowerResult"]

logger = logging.getLogger("trainstack.towers")


class TowerTrainer(Trainer):
    """A trainer whose model is a :class:`TowerFunc` (``trainer.tower_func``).

    ``TowerTrainer(config)`` is the older API (a TrainConfig given to the
    trainer, then ``trainer.train()``); see :mod:`trainstack.towers.compat`.
    """

    stop_exceptions = (tf.errors.OutOfRangeError,)

    def __init__(self, config: Any = None) -> None:
        super().__init__()
        self._tower_func: TowerFunc | None = None
        self._input: InputSource | None = None
        self._optimizer: Any = None
        #: where the main training tower records its summaries (MovingAverageSummary reads it)
        self.summary_collection = SummaryCollection(type(self).__name__)
        self._predictors: dict[tuple, OnlinePredictor] = {}
        self._legacy_config_bound = False
        if config is not None:
            from .compat import bind_legacy_config
            bind_legacy_config(self, config)
            self._legacy_config_bound = True

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
            self.register_callback(cb)
        self._input = source
        return signature

    @property
    def optimizer(self) -> Any:
        """The Keras optimizer (unwrapped from apply_grad_processors); None before setup."""
        return self._optimizer

    @property
    def checkpoint_objects(self) -> dict[str, Any]:
        """What a checkpoint holds: ``model`` (the tower function's
        :attr:`~TowerFunc.checkpoint_module`) and ``optimizer`` when there is one."""
        if self._tower_func is None:
            raise RuntimeError(f"{type(self).__name__}.checkpoint_objects exists after setup_graph(): "
                               "the model's variables are created there")
        objects: dict[str, Any] = {"model": self._tower_func.checkpoint_module}
        if self._optimizer is not None:
            objects["optimizer"] = self._optimizer
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
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"get_predictors(n=...) must be a positive int, got {n!r}")
        return [self.get_predictor(input_names, output_names, device=k) for k in range(n)]

    # -- running ---------------------------------------------------------------------------------------
    def _initialize(self, session_init: Any = None, **kwargs: Any) -> None:
        """Initialize the model's variables from ``session_init`` (see ``sessinit.SmartInit``:
        a checkpoint path, a dict of arrays, a SessionInit, ...); None keeps them as they are."""
        if kwargs:
            raise TypeError(f"{type(self).__name__}.initialize() got unexpected arguments {sorted(kwargs)}; "
                            "it takes session_init")
        if session_init is not None:
            from .sessinit import SmartInit
            SmartInit(session_init).init(self)

    def train(self, *args: Any, **kwargs: Any) -> None:
        """The loop's ``train(callbacks, monitors, steps_per_epoch, ...)``; with no arguments,
        trains with the TrainConfig given to the constructor (the older API)."""
        if not args and not kwargs:
            if self._legacy_config_bound:
                from .compat import train_legacy
                return train_legacy(self)
            raise TypeError(f"{type(self).__name__}.train() needs callbacks, monitors and steps_per_epoch; "
                            "or use train_with_defaults(...) or launch_train_with_config(config, trainer)")
        return super().train(*args, **kwargs)

    def default_extra_callbacks(self) -> list[Callback]:
        return DEFAULT_CALLBACKS()

    def default_monitors(self) -> list[MonitorBase]:
        return DEFAULT_MONITORS()

    def _default_steps_per_epoch(self) -> int:
        return self.input.size()


class TowerResult(NamedTuple):
    """What building one training tower gives: its cost, its gradients and its handle."""

    cost: tf.Tensor
    grads_and_vars: list
    handle: TowerHandle


class SingleCostTrainer(TowerTrainer):
    """Minimizes the cost a tower function returns; see the module docstring.

    ``xla_compile``: compile the towers and the update with XLA.
    """

    #: compile the towers and the update with XLA (``tf.function(jit_compile=True)``)
    xla_compile: bool = False
    #: whether the step computes and applies gradients (NoOpTrainer: no)
    _trains = True

    def __init__(self, config: Any = None, *, xla_compile: bool | None = None) -> None:
        if xla_compile is not None:
            self.xla_compile = bool(xla_compile)
        self.train_op: TracedStep | None = None
        self._grad_processors: list[GradientProcessor] = []
        self._trainable: list[tf.Variable] = []
        self._filter_none = FilterNoneGrad()
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
        signature = self.setup_input(input_signature, self._as_input_source(input), self.num_towers)
        if isinstance(get_cost_fn, TowerFunc):
            if tuple(get_cost_fn.input_signature) != signature:
                raise ValueError(f"the TowerFunc's input signature {list(get_cost_fn.input_signature)} "
                                 f"differs from input_signature {list(signature)}")
            self.tower_func = get_cost_fn
        else:
            self.tower_func = TowerFunc(get_cost_fn, signature)
        if get_opt_fn is not None:
            opt = get_opt_fn()
            check_optimizer(opt, "get_opt_fn()")
            self._optimizer, self._grad_processors = unwrap_optimizer(opt)
        elif self._trains:
            raise TypeError(f"{type(self).__name__}.setup_graph() needs get_opt_fn, a function "
                            "returning the optimizer")
        self._build_variables()
        if self._trains and not self._optimizer.built:
            self._optimizer.build(self._trainable)
        self.train_op = TracedStep(self._step_body, self.input.feed_signature(), name="train_step")
        self.train_op.trace(())

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
            with self.input.tracing(feeds):
                inputs = self._get_tower_inputs()[0]
            with _device(self._tower_device(0)), summary_collection_scope(None):
                with TowerContext("tower0", is_training=True, index=0):
                    with tf.GradientTape() as tape:
                        cost = self.tower_func(*inputs)
            found[:] = tape.watched_variables()
            return _check_cost(cost, self.tower_func)

        tf.function(build, input_signature=[self.input.feed_signature()]).get_concrete_function()
        frozen = _frozen_ids(self.tower_func.owner)
        self._trainable = [v for v in found if v.trainable and id(v) not in frozen]
        if self._trains and not self._trainable:
            raise ValueError(f"the cost of tower function {self.tower_func!r} depends on no trainable "
                             "variable: there is nothing to train")

    # -- one step --------------------------------------------------------------------------------
    def _step_body(self, feeds: Any, fetch_names: tuple[str, ...]) -> tuple[Any, dict[str, Any]]:
        with self.input.tracing(feeds):
            tower_inputs = self._get_tower_inputs()
        compute = functools.partial(self._compute, fetch_names=fetch_names)
        if self.xla_compile:
            compute = tf.function(compute, jit_compile=True)
        return compute(tower_inputs)

    def _get_tower_inputs(self) -> list[list[tf.Tensor]]:
        inputs = []
        for k in range(self.num_towers):
            with _device(self._tower_device(k)):
                inputs.append(self.input.get_input_tensors())
        return inputs

    def _compute(self, tower_inputs: list[list[tf.Tensor]],
                 fetch_names: tuple[str, ...]) -> tuple[Any, dict[str, Any]]:
        results = self._build_towers(tower_inputs)
        with summary_collection_scope(self.summary_collection):
            output = self._apply_towers(results)
        main = results[0].handle
        return output, {name: main.get_tensor(name) for name in fetch_names}

    def _build_towers(self, tower_inputs: list[list[tf.Tensor]]) -> list[TowerResult]:
        return [self._build_tower(k, inputs) for k, inputs in enumerate(tower_inputs)]

    def _build_tower(self, index: int, inputs: Sequence[tf.Tensor]) -> TowerResult:
        """Build training tower ``index`` on its device: its cost and its gradients."""
        collection = self.summary_collection if index == 0 else None
        with _device(self._tower_device(index)), summary_collection_scope(collection):
            with TowerContext(f"tower{index}", is_training=True, index=index) as ctx:
                with tf.GradientTape() as tape:
                    cost = self.tower_func(*inputs)
                cost = _check_cost(cost, self.tower_func)
                grads = self._compute_gradients(tape, cost)
        return TowerResult(cost, grads, self.tower_func.towers[ctx.name])

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
        self._optimizer.apply_gradients(grads_and_vars)


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
