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
    """``[MovingAverageSummary(), ProgressBar(), MergeAllSummaries(), RunUpdateOps()]``."""
    return [MovingAverageSummary(), ProgressBar(), MergeAllSummaries(), RunUpdateOps()]


def DEFAULT_MONITORS() -> list[MonitorBase]:  # noqa: N802 - tensorpack's name
    """``[TFEventWriter(), JSONWriter(), ScalarPrinter()]``, writing to the logger directory."""
    return [TFEventWriter(), JSONWriter(), ScalarPrinter()]
