"""The seeds' default extra callbacks and monitors, used by the trainers.

``TrainConfig(extra_callbacks=None, monitors=None)`` and
``Trainer.train_with_defaults`` in the towers layer fall back to these.
They are functions, so that every run gets fresh instances.
"""
from __future__ import annotations

from trainstack.loop import Callback, MonitorBase

from .graph import RunUpdateOps
from .jsonwriter import JSONWriter
from .printer import ScalarPrinter
from .progress import ProgressBar
from .summary_callbacks import MergeAllSummaries, MovingAverageSummary
from .tfevent import TFEventWriter

__all__ = ["DEFAULT_CALLBACKS", "DEFAULT_MONITORS"]


def DEFAULT_CALLBACKS() -> list[Callback]:  # noqa: N802 - tensorpack's name
    """``[MovingAverageSummary(), ProgressBar(), MergeAllSummaries(), RunUpdateOps()]``.

    The ``RunUpdateOps`` here tells that it does nothing in TF2 at DEBUG, not at
    INFO as one the user adds does: every run has it, and the note is not news.
    """
    update_ops = RunUpdateOps()
    update_ops._added_by_default = True
    return [MovingAverageSummary(), ProgressBar(), MergeAllSummaries(), update_ops]


def DEFAULT_MONITORS() -> list[MonitorBase]:  # noqa: N802 - tensorpack's name
    """``[TFEventWriter(), JSONWriter(), ScalarPrinter()]``, writing to the logger directory."""
    return [TFEventWriter(), JSONWriter(), ScalarPrinter()]
