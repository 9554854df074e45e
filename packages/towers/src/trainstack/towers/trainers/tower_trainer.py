"""TowerTrainer: a trainer whose model is a tower function.

It knows the model's tower function (``trainer.tower_func``): it builds predictors (inference
towers) from it and names what a checkpoint holds (:mod:`.checkpoint_objects`). It declares the
hooks the tensorpack layer's trainers override (see the class docstring). The single-cost step is
:class:`~trainstack.towers.SingleCostTrainer`'s (:mod:`.single_cost`).
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager as ContextManager
from typing import Any

import tensorflow as tf

from trainstack.callbacks import DEFAULT_CALLBACKS, DEFAULT_MONITORS, SummaryCollection, default_summary_collection
from trainstack.inputs import InputSource, QueueInput, normalize_signature
from trainstack.loop import Callback, MonitorBase, Trainer, check_int

from ..predict.predictor import OnlinePredictor, predict_device
from ..tower.eager import runs_eagerly
from ..tower.tower import TowerFunc
from .checkpoint_objects import DeclaredCheckpoint
from .construction import Constructed, own_collection, own_summaries, refuse_config

__all__ = ["TowerTrainer"]

logger = logging.getLogger("trainstack.towers")

#: where summaries go when nothing chose a collection (see TowerTrainer.run)
_DEFAULT_SUMMARIES = default_summary_collection()


class TowerTrainer(DeclaredCheckpoint, Trainer, metaclass=Constructed):
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
        input.setup(signature))``; the loop's ``register_callback`` calls this for each). The callbacks
        of an InputSource also tell the trainer its input (``trainer.input``) when it has none yet, or
        when the source wraps it (a StagingInput's callbacks are its wrapped source's, then its own)."""
        source = getattr(cb, "source", None)
        if isinstance(source, InputSource) and (self._input is None or _wraps(source, self._input)):
            self._input = source
        return super().register_callback(cb)

    @property
    def optimizer(self) -> Any:
        """The Keras optimizer (unwrapped from apply_grad_processors); None before setup."""
        return self._optimizer

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
        return self._checked_run(super().run, fn, *args)

    def hooked_run(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self._checked_run(super().hooked_run, fn, *args)

    def _checked_run(self, run: Callable[..., Any], fn: Callable[..., Any], *args: Any) -> Any:
        """``run(fn, *args)``; an error when the step recorded summaries into the process-wide default
        collection, which this trainer's callbacks do not read (they read ``summary_collection``),
        rather than summaries lost without a word."""
        before = len(_DEFAULT_SUMMARIES)
        output = run(fn, *args)
        if len(_DEFAULT_SUMMARIES) == before and not getattr(fn, "default_summaries", None):
            return output
        names = list(dict.fromkeys([*getattr(fn, "default_summaries", ()), *_DEFAULT_SUMMARIES.names[before:]]))
        name = type(self).__name__
        raise RuntimeError(
            f"{name}: the step {getattr(fn, 'name', None) or fn!r} recorded the summaries {names} into "
            f"the process-wide default collection, which {name} does not report (its callbacks read "
            "trainer.summary_collection): they would be lost. The trainer's collection records by "
            f"default in {name}.__init__: make and trace the step there (TracedStep(...).trace()), or "
            "record under `with summary_collection_scope(trainer.summary_collection):` in the step")

    def _initialize(self, session_init: Any = None, **kwargs: Any) -> None:
        """Initialize the model's variables from ``session_init`` (see ``SmartInit``:
        a checkpoint path, a dict of arrays, a SessionInit, ...); None keeps them as they are."""
        if kwargs:
            raise TypeError(f"{type(self).__name__}.initialize() got unexpected arguments {sorted(kwargs)}; "
                            "it takes session_init")
        if session_init is not None:
            from ..session.smart_init import SmartInit
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


def _wraps(outer: InputSource, inner: InputSource) -> bool:
    """Whether ``inner`` is the source ``outer`` wraps, directly or through other wrappers."""
    source = getattr(outer, "input", None)
    while isinstance(source, InputSource):
        if source is inner:
            return True
        source = getattr(source, "input", None)
    return False
