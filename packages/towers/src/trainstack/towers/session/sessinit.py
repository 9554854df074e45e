"""Initializers: set a trainer's variables from a checkpoint, a dict of arrays, or a chain of them.

tensorpack's ``SessionInit`` for TensorFlow 2. There is no session: an initializer
writes into the variables of ``trainer.checkpoint_objects`` (the dict name -> trackable
that the savers of the callbacks layer checkpoint), after the trainer has built its
graph (all variables exist) and before the first step. ``init(trainer)`` logs what was
restored and, as warnings, what was missing on either side; the details stay in
``initializer.report`` (an :class:`InitReport`).

- :class:`CheckpointInit` (tensorpack's ``SaverRestore``): a ``tf.train.Checkpoint``
  written by ``ModelSaver``/``MinSaver`` or by plain TensorFlow, restored with
  ``tf.train.Checkpoint(**checkpoint_objects).restore(path)``. Values match variables
  by object structure (the names of ``checkpoint_objects`` and the attributes below
  them), as in TensorFlow, paired once before anything is restored by
  :func:`trainstack.callbacks.checkpoint_layout.match_checkpoint` (the layout the savers
  write); the savers' ``loop_state``/``monitor_state``/``save_counter``/``best_stat`` are
  not model values and are left alone (see ``restore_loop_state`` to resume; ModelSaver
  restores ``monitor_state`` itself when a run resumes). A run resuming from its own
  checkpoint (``resume=True``) stops with a :class:`ResumeError` when the checkpoint lacks
  a variable; loading a pretrained or foreign one warns with the list. A name-based (TF1,
  tensorpack) checkpoint, keyed by variable name (``conv0/W``, ``bn/mean/EMA``), is refused
  naming ``trainstack.tensorpack``'s ``SaverRestore``, which reads it by name as tensorpack did.
- :class:`DictRestore`: ``{variable name: array}``, by Keras 3 ``variable.path``
  (``"dense/kernel"``), ``tf.Variable.name`` (a ``":0"`` suffix is optional) or the
  variable's path under ``checkpoint_objects`` (``"w"`` for ``{"w": tf.Variable(...)}``).
- :class:`ChainInit` runs several in order; :class:`JustCurrentSession` does nothing;
  :func:`SmartInit` picks one from what it is given (None, a path, a dict, a list...).
"""
from __future__ import annotations

import abc
import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

__all__ = ["InitReport", "SessionInit", "JustCurrentSession", "ChainInit", "ResumeError"]

logger = logging.getLogger("trainstack.towers")


class ResumeError(ValueError):
    """A run resuming from its own checkpoint would train some variables from fresh values:
    the checkpoint lacks them. Raised before anything is restored."""


@dataclasses.dataclass
class InitReport:
    """What an initializer did.

    Variables are named by their Keras ``path`` (``"dense/kernel"``), other variables by
    their path under ``checkpoint_objects`` (``"w"``, ``"ema/avg"``); values the source
    holds for no variable by their checkpoint key or dict key.
    """

    source: str
    restored: list[str] = dataclasses.field(default_factory=list)
    #: variables of the trainer the source has no value for (left as they were)
    missing: list[str] = dataclasses.field(default_factory=list)
    #: values in the source that no variable of the trainer matched
    unused: list[str] = dataclasses.field(default_factory=list)
    #: matched but deliberately left as they were (``ignore=``, or a shape mismatch with
    #: ``ignore_mismatch=True``)
    skipped: list[str] = dataclasses.field(default_factory=list)
    #: values under checkpoint keys the trainer says it does not need (its
    #: ``checkpoint_keys_not_needed``, e.g. a predictor's ``("optimizer",)``): reported, not warned
    not_needed: list[str] = dataclasses.field(default_factory=list)
    #: who did not need them (the trainer's class name)
    not_needed_by: str = ""
    #: a variable's object path under ``checkpoint_objects`` (its checkpoint key without the
    #: suffix, e.g. ``model/fc/_kernel``), by its name above, where the two differ
    paths: dict[str, str] = dataclasses.field(default_factory=dict)

    def set_aside(self, keys: Sequence[str], by: str) -> None:
        """Move the unused values under the top-level checkpoint ``keys`` to ``not_needed``."""
        aside = [k for k in self.unused if k.split("/", 1)[0] in keys]
        if aside or not self.not_needed:
            self.not_needed_by = by
        self.unused = [k for k in self.unused if k not in aside]
        self.not_needed.extend(aside)

    def log(self) -> None:
        logger.info("Restored %d variables from %s.", len(self.restored), self.source)
        if self.missing:
            logger.warning("%s has no value for these %d variables of the trainer; they keep the values "
                           "they have (their initial values, unless an earlier initializer set them) "
                           "and train from there: %s", self.source, len(self.missing),
                           ", ".join(f"{self.paths[n]} ({n})" if n in self.paths else n for n in self.missing))
        if self.unused:
            logger.warning("These values in %s match no variable of the trainer and were not used: %s",
                           self.source, ", ".join(self.unused))
        if self.skipped:
            logger.info("Not restored from %s (ignored or mismatched): %s", self.source,
                        ", ".join(self.skipped))
        if self.not_needed:
            logger.info("%d values in %s are not needed by %s (%s) and were not used.", len(self.not_needed),
                        self.source, self.not_needed_by, ", ".join(self.not_needed_listing()))

    def not_needed_listing(self) -> list[str]:
        """How the log lists ``not_needed``: by top-level checkpoint key (a subclass may list names)."""
        return sorted({k.split("/", 1)[0] for k in self.not_needed})


class SessionInit(abc.ABC):
    """Base class: sets the variables of a trainer; subclasses implement ``_run_init``.

    ``init(trainer)`` runs once the trainer's graph is built; ``trainer`` is anything with
    ``checkpoint_objects`` (a dict name -> tf.Variable, tf.Module or Keras object), and
    optionally ``checkpoint_keys_not_needed``: top-level checkpoint keys whose values it
    expects to leave unused (reported at INFO level instead of warned about).
    """

    #: the report of the last ``init`` (None before, and for initializers that restore nothing)
    report: InitReport | None = None

    def init(self, trainer: Any) -> None:
        """Initialize the variables of ``trainer``; log what was done."""
        logger.info("Initializing variables with %r ...", self)
        self.report = self._run_init(trainer)
        if self.report is not None:
            self.report.set_aside(getattr(trainer, "checkpoint_keys_not_needed", ()), type(trainer).__name__)
            self.report.log()

    @abc.abstractmethod
    def _run_init(self, trainer: Any) -> InitReport | None:
        """Set the variables; return what was done (None when nothing was restored)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class JustCurrentSession(SessionInit):
    """Do nothing: variables keep the values they were created with."""

    def _run_init(self, trainer: Any) -> None:
        return None


class ChainInit(SessionInit):
    """Run several initializers in order (later ones overwrite what earlier ones set)."""

    def __init__(self, sess_inits: Sequence[SessionInit]) -> None:
        inits = list(sess_inits)
        for i, init in enumerate(inits):
            if not isinstance(init, SessionInit):
                raise TypeError(f"ChainInit takes a list of SessionInit; item {i} is {init!r} "
                                "(wrap paths, dicts, ... with SmartInit)")
        self.inits = inits

    def _run_init(self, trainer: Any) -> None:
        for init in self.inits:
            init.init(trainer)

    def __repr__(self) -> str:
        return f"ChainInit({self.inits!r})"


# -- walking the objects (the walk and the pairing are checkpoint_layout's) ---------------------------




