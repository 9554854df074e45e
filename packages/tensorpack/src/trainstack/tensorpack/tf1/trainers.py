"""tensorpack's trainers: the core's, each with :class:`TF1Trainer`'s overrides of the core's hooks.

:class:`TF1Trainer` (a mixin, first in each class's bases) overrides the hooks
:class:`~trainstack.towers.TowerTrainer` declares:

- ``_constructing``: a trainer that builds its graph in ``__init__`` (``records_graph_build``,
  tensorpack's custom trainers, e.g. a GAN's) is constructed inside the room's recording
  (:mod:`.recording`), which traces the steps it built when ``__init__`` returns;
- ``_outside_tower``: the optimizer function runs inside the room;
- ``_adapt_optimizer``: a ``tf.compat.v1.train`` optimizer becomes its Keras stand-in;
- ``optimizer``: a trainer that built its graph in ``__init__`` with one optimizer has it as its own;
- ``tower_func_class``: a plain tower function is built in the room (:class:`~.tower.TowerFunc`);
- ``implicit_callbacks``: the callback keeping ``get_global_step_var()`` equal to the loop's step
  (``tower_func``'s setter marks the trainer's tower function as one whose training towers may
  read it: in a tower a core trainer trains it is an error);
- ``_in_graph_step_done``: that variable advances with each step of a multi-step call;
- ``register_callback``/``train``: a script's callback builds its TF1 graph in ``_setup_graph`` and runs
  it in its other hooks (:mod:`.callback_graphs`), while the trainer trains.

And tensorpack 003's forms: ``SimpleTrainer(config).train()``,
``SyncMultiGPUTrainerReplicated(config, gpu_prefetch=True)``,
``MultiGPUTrainerBase.build_on_multi_tower(...)`` (see :mod:`.legacy`).
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager as ContextManager
from typing import Any

from trainstack.loop import Callback
from trainstack.towers import TowerFunc as CoreTowerFunc
from trainstack.towers import trainers as core
from trainstack.towers.run.config import TrainConfig

from . import callback_graphs, recording, step_counter
from .legacy.compat import bind_legacy_config, train_legacy
from .legacy.compat_multigpu import build_on_multi_tower, legacy_devices, legacy_options
from .room import emulation
from .tower import TowerFunc
from .train_optimizers import adapt_optimizer

__all__ = ["TF1Trainer", "TowerTrainer", "SingleCostTrainer", "SimpleTrainer", "QueueInputTrainer",
           "NoOpTrainer", "MultiGPUTrainerBase", "SyncMultiGPUTrainerReplicated",
           "SyncMultiGPUTrainerParameterServer", "SyncMultiGPUTrainer", "AsyncMultiGPUTrainer"]

#: the keyword arguments of the core trainers' current form (gpu_prefetch is one: the older form's too)
_STEP_OPTIONS = frozenset({*core.StepOptions.names(), "options"})


class TF1Trainer:
    """The overrides of the core trainers' hooks for tensorpack's TF1 scripts (see the module)."""

    #: whether ``__init__`` may build the graph as tensorpack's custom trainers do (a TowerContext
    #: entered eagerly, ``opt.minimize(...)``): then it runs inside the room's recording. The
    #: trainers that build their step in ``setup_graph`` set it to False.
    records_graph_build: bool = True
    tower_func_class: type[CoreTowerFunc] = TowerFunc

    @property
    def tower_func(self) -> Any:
        return core.TowerTrainer.tower_func.fget(self)  # type: ignore[attr-defined]

    @tower_func.setter
    def tower_func(self, func: Any) -> None:
        """The core's setter; the tower function's training towers may read ``get_global_step_var()``
        (this trainer keeps the variable equal to the step)."""
        core.TowerTrainer.tower_func.fset(self, func)  # type: ignore[attr-defined]
        step_counter.mirror_step_of(func)

    @property
    def optimizer(self) -> Any:
        """The core's (the optimizer ``setup_graph`` made); for a trainer that built its graph in
        ``__init__``, the optimizer its ``opt.minimize`` calls used when they used one (a GAN's
        ``model.get_optimizer()``), so that ``ScheduledHyperParamSetter('learning_rate', ...)`` sets
        the learning-rate variable its ``optimizer()`` made; None when they used several."""
        own = core.TowerTrainer.optimizer.fget(self)  # type: ignore[attr-defined]
        if own is not None or not self.records_graph_build:
            return own
        used = list(self.optimizers.values())  # type: ignore[attr-defined]
        return used[0] if len(used) == 1 else None

    def _constructing(self) -> ContextManager[Any]:
        stack = contextlib.ExitStack()
        stack.enter_context(super()._constructing())  # type: ignore[misc]
        if self.records_graph_build:
            stack.enter_context(emulation())
            stack.enter_context(recording.constructing(self))
        return stack

    def _outside_tower(self) -> ContextManager[Any]:
        stack = contextlib.ExitStack()
        stack.enter_context(emulation())
        stack.enter_context(recording.constructing(self))
        return stack

    def _adapt_optimizer(self, optimizer: Any) -> Any:
        return adapt_optimizer(optimizer)

    def implicit_callbacks(self) -> list[Callback]:
        mirror = step_counter.step_mirror(self)
        return [*super().implicit_callbacks(), *([] if mirror is None else [mirror])]  # type: ignore[misc]

    def _in_graph_step_done(self) -> None:
        super()._in_graph_step_done()  # type: ignore[misc]
        step_counter.advance_in_graph()

    def register_callback(self, cb: Any) -> Any:
        """The core's; a script's own callback builds its TF1 graph in ``_setup_graph``, to run in
        its other hooks while the trainer trains (see :mod:`.callback_graphs`)."""
        registered = super().register_callback(cb)  # type: ignore[misc]
        if isinstance(cb, Callback) and registered is True:
            self.__dict__.setdefault("_tf1_callback_graphs", callback_graphs.CallbackGraphs(self)).add(cb)
        return registered

    def train(self, *args: Any, **kwargs: Any) -> Any:
        """The loop's ``train``; the script callbacks' hooks are theirs again when it returns."""
        try:
            return super().train(*args, **kwargs)  # type: ignore[misc]
        finally:
            graphs = self.__dict__.pop("_tf1_callback_graphs", None)
            if graphs is not None:
                graphs.restore()


class OlderForms:
    """tensorpack 003's ``Trainer(config)`` and ``trainer.train()`` on a single-tower trainer."""

    def __init__(self, config: Any = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(None, *args, **kwargs)  # type: ignore[call-arg]
        if config is not None:  # the older form; anything but a TrainConfig is a TypeError naming it
            bind_legacy_config(self, config)

    def train(self, *args: Any, **kwargs: Any) -> None:
        """The loop's ``train(...)``; with no arguments, the older form: trains with the TrainConfig
        given to the constructor."""
        if not args and not kwargs and isinstance(self.__dict__.get("config"), TrainConfig):
            return train_legacy(self)
        return super().train(*args, **kwargs)  # type: ignore[misc]


class TowerTrainer(TF1Trainer, OlderForms, core.TowerTrainer):
    """tensorpack's TowerTrainer: the core's, with the TF1 room (see the module)."""


class SingleCostTrainer(TF1Trainer, OlderForms, core.SingleCostTrainer):
    """tensorpack's SingleCostTrainer (see the module)."""

    records_graph_build = False


class SimpleTrainer(TF1Trainer, OlderForms, core.SimpleTrainer):
    """tensorpack's SimpleTrainer (see the module): a dataflow is fed, as the core's."""

    records_graph_build = False


class QueueInputTrainer(TF1Trainer, OlderForms, core.QueueInputTrainer):
    """tensorpack's QueueInputTrainer (see the module)."""

    records_graph_build = False


class NoOpTrainer(TF1Trainer, OlderForms, core.NoOpTrainer):
    """tensorpack's NoOpTrainer (see the module)."""

    records_graph_build = False


class OlderMultiGPUForms:
    """tensorpack 003's ``Trainer(config, ...)`` on a multi-GPU trainer: the config's towers are
    the devices; ``older`` gives the older form's signature and its extra arguments' defaults."""

    older: tuple[str, dict[str, Any]] = ("(config)", {})

    def _older_init(self, config: TrainConfig, given: dict[str, Any], defaults: dict[str, Any],
                    **must_be_none: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        name = type(self).__name__
        current = {k: given.pop(k) for k in list(given) if k in _STEP_OPTIONS}
        options = legacy_options(name, self.older[0], given, defaults, **must_be_none)
        self._older_config = config
        return {**current, **options}, options

    def _bind_older(self, options: dict[str, Any]) -> None:
        bind_legacy_config(self, self.__dict__.pop("_older_config"))

    def train(self, *args: Any, **kwargs: Any) -> None:
        """The loop's ``train(...)``; with no arguments, the older form (see :class:`OlderForms`)."""
        if not args and not kwargs and isinstance(self.__dict__.get("config"), TrainConfig):
            return train_legacy(self)
        return super().train(*args, **kwargs)  # type: ignore[misc]

    @staticmethod
    def build_on_multi_tower(towers: Sequence[int], func: Callable[[], Any],
                             devices: Sequence[Any] | None = None, var_strategy: str = "shared",
                             vs_names: Sequence[str] | None = None) -> list[Any]:
        """The older helper: call ``func`` once per tower, under its TowerContext and device; see
        :func:`.legacy.compat_multigpu.build_on_multi_tower`."""
        return build_on_multi_tower(towers, func, devices, var_strategy, vs_names)


class MultiGPUTrainerBase(TF1Trainer, OlderMultiGPUForms, core.MultiGPUTrainerBase):
    """tensorpack's MultiGPUTrainerBase (see the module)."""

    records_graph_build = False


class SyncMultiGPUTrainerReplicated(TF1Trainer, OlderMultiGPUForms, core.SyncMultiGPUTrainerReplicated):
    """tensorpack's SyncMultiGPUTrainerReplicated; also ``(config, gpu_prefetch=True)``."""

    records_graph_build = False
    older = ("(config, gpu_prefetch=True)", {})

    def __init__(self, gpus: Any, average: Any = True, mode: str | None = None, **kwargs: Any) -> None:
        if not isinstance(gpus, TrainConfig):
            super().__init__(gpus, average, mode, **kwargs)
            return
        # the older form (config, gpu_prefetch=True): its second argument is gpu_prefetch
        current, options = self._older_init(gpus, kwargs, {"gpu_prefetch": average}, mode=mode)
        super().__init__(legacy_devices(gpus), True, **current)
        self._bind_older(options)


class SyncMultiGPUTrainerParameterServer(TF1Trainer, OlderMultiGPUForms,
                                         core.SyncMultiGPUTrainerParameterServer):
    """tensorpack's SyncMultiGPUTrainerParameterServer; also ``(config, ps_device='gpu',
    gpu_prefetch=True)``."""

    records_graph_build = False
    older = ("(config, ps_device='gpu', gpu_prefetch=True)", {})

    def __init__(self, gpus: Any, ps_device: str | None = None, **kwargs: Any) -> None:
        if not isinstance(gpus, TrainConfig):
            super().__init__(gpus, ps_device, **kwargs)
            return
        current, options = self._older_init(gpus, kwargs, {"gpu_prefetch": True})
        super().__init__(legacy_devices(gpus), "gpu" if ps_device is None else ps_device, **current)
        self._bind_older(options)


class AsyncMultiGPUTrainer(TF1Trainer, OlderMultiGPUForms, core.AsyncMultiGPUTrainer):
    """tensorpack's AsyncMultiGPUTrainer; also ``(config, scale_gradient=True)``."""

    records_graph_build = False
    older = ("(config, scale_gradient=True)", {})

    def __init__(self, gpus: Any, scale_gradient: bool = True, **kwargs: Any) -> None:
        if not isinstance(gpus, TrainConfig):
            super().__init__(gpus, scale_gradient, **kwargs)
            return
        current, options = self._older_init(gpus, kwargs, {"gpu_prefetch": True})
        super().__init__(legacy_devices(gpus), scale_gradient, **current)
        self._bind_older(options)


def SyncMultiGPUTrainer(gpus: Any, *args: Any, **kwargs: Any) -> core.MultiGPUTrainerBase:  # noqa: N802
    """tensorpack's ``SyncMultiGPUTrainer(gpus)``: ``SyncMultiGPUTrainerParameterServer(gpus,
    ps_device='cpu')``; the older ``SyncMultiGPUTrainer(config)`` is
    ``SyncMultiGPUTrainerParameterServer(config, ps_device='gpu')``, as it was then."""
    if "ps_device" not in kwargs and not args:
        kwargs["ps_device"] = "gpu" if isinstance(gpus, TrainConfig) else "cpu"
    return SyncMultiGPUTrainerParameterServer(gpus, *args, **kwargs)
