"""The Callback base class: tensorpack's hooks, with template methods.

Each public hook (``before_epoch``, ``trigger_step``, ...) is what the
trainer calls; it does the bookkeeping and calls the matching ``_hook``,
which is what a subclass overrides. A callback that overrides neither form
of a hook is never called on it, so an unused per-step hook costs nothing.

Order of hooks in a run (see ``Trainer.main_loop``)::

    setup_graph
    before_train
    for each epoch:
        before_epoch
        for each step:  before_run, (the step), after_run   [hooked runs only]
                        trigger_step
        after_epoch
        trigger_epoch   (calls trigger() unless overridden)
    after_train         (always, even after an error)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .checks import check_bool
from .run import RunArgs, RunContext, RunValues

if TYPE_CHECKING:  # pragma: no cover
    from .trainer import Trainer

__all__ = ["Callback", "HOOKS"]

#: The hooks the trainer calls, in the order of a run.
HOOKS = ("setup_graph", "before_train", "before_epoch", "before_run", "after_run",
         "trigger_step", "after_epoch", "trigger_epoch", "after_train")

# Which overridable methods make a hook do something. trigger_epoch calls
# trigger() by default, so overriding either of them activates it.
_HOOK_METHODS: dict[str, tuple[str, ...]] = {h: (h, "_" + h) for h in HOOKS}
_HOOK_METHODS["trigger_epoch"] += ("trigger", "_trigger")


class Callback:
    """Base class of all callbacks.

    Attributes available from ``setup_graph`` on: ``trainer``, and the loop
    counters ``epoch_num``, ``global_step``, ``local_step`` (read from the
    trainer's loop state, never copied).

    ``chief_only`` (default True, as in tensorpack): only the chief process
    of a distributed run keeps this callback.

    ``needs_every_step`` (default False): the callback must see every step
    (e.g. it feeds each step its own batch). A trainer with ``steps_per_run``
    above 1 then runs one step per call, and logs why.
    """

    _chief_only = True
    needs_every_step: bool = False
    trainer: Trainer

    # -- public hooks: bookkeeping, then the overridable _hook ----------------
    def setup_graph(self, trainer: Trainer) -> None:
        self.trainer = trainer
        self._setup_graph()

    def before_train(self) -> None:
        self._before_train()

    def before_epoch(self) -> None:
        self._before_epoch()

    def before_run(self, ctx: RunContext) -> RunArgs | None:
        """Ask for fetches/feeds for this hooked run.

        ``_before_run`` may return None, a :class:`RunArgs`, or just the
        fetches (a name, a list of names, or a dict key -> name).
        """
        req = self._before_run(ctx)
        if req is None or isinstance(req, RunArgs):
            return req
        return RunArgs(fetches=req)

    def after_run(self, run_context: RunContext, run_values: RunValues) -> None:
        self._after_run(run_context, run_values)

    def trigger_step(self) -> None:
        self._trigger_step()

    def after_epoch(self) -> None:
        self._after_epoch()

    def trigger_epoch(self) -> None:
        self._trigger_epoch()

    def trigger(self) -> None:
        self._trigger()

    def after_train(self) -> None:
        self._after_train()

    # -- overridable hooks ---------------------------------------------------
    def _setup_graph(self) -> None:
        """Build what the callback needs (ops, variables, files) before training."""

    def _before_train(self) -> None:
        """Right before the first step, after the trainer is initialized."""

    def _before_epoch(self) -> None:
        """Right before each epoch's first step."""

    def _before_run(self, ctx: RunContext) -> Any:
        """Before each hooked run: return what to fetch/feed, or None."""
        return None

    def _after_run(self, run_context: RunContext, run_values: RunValues) -> None:
        """After each hooked run: ``run_values.results`` holds what was fetched."""

    def _trigger_step(self) -> None:
        """After each ``run_step`` (once per run of ``trainer.loop.run_size`` steps)."""

    def _after_epoch(self) -> None:
        """Right after each epoch's last step (before trigger_epoch)."""

    def _trigger_epoch(self) -> None:
        """After each epoch; calls :meth:`trigger` by default."""
        self.trigger()

    def _trigger(self) -> None:
        """The general "do it now" action; schedulers may call it inside an epoch too."""

    def _after_train(self) -> None:
        """After training, whether it finished, stopped or failed."""

    # -- queries ---------------------------------------------------------------
    def last_checkpoint(self) -> tuple[int, str] | None:
        """``(global step, path)`` of the newest checkpoint this callback wrote (or found, in a
        resumed run) that a run resumes from; None for callbacks that keep none (the default).
        What ending the process at once reports as lost is counted from it
        (:meth:`Trainer.lost_on_exit`)."""
        return None

    # -- properties ------------------------------------------------------------
    @property
    def epoch_num(self) -> int:
        return self.trainer.epoch_num

    @property
    def global_step(self) -> int:
        return self.trainer.global_step

    @property
    def local_step(self) -> int:
        return self.trainer.local_step

    @property
    def chief_only(self) -> bool:
        """Whether only the chief process runs this callback."""
        return self._chief_only

    @chief_only.setter
    def chief_only(self, value: bool) -> None:
        self._chief_only = check_bool(type(self).__name__, "chief_only", value)

    def set_chief_only(self, value: bool = True) -> Callback:
        """Set ``chief_only`` and return the callback itself (for chaining)."""
        self.chief_only = value
        return self

    @property
    def name(self) -> str:
        """Display name, used in logs and timing reports (default: :meth:`_default_name`)."""
        return getattr(self, "_name", None) or self._default_name()

    @name.setter
    def name(self, value: str) -> None:
        self._name = value

    def _default_name(self) -> str:
        """The name when none was set; override to describe the instance (default: the class name)."""
        return type(self).__name__

    def __str__(self) -> str:
        return self.name

    def overrides(self, hook: str) -> bool:
        """Whether calling ``hook`` on this callback can do anything.

        Wrappers that forward hooks to another callback override this to ask
        the wrapped callback, so that they stay free on hooks it does not use.
        The trainer's callback group asks when it is made and again after every
        callback's ``setup_graph``: the second answer, which may depend on the
        trainer, is the one training uses.
        """
        cls = type(self)
        return any(getattr(cls, m) is not getattr(Callback, m) for m in _HOOK_METHODS[hook])
