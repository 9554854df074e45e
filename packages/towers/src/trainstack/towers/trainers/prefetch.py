"""OverlappedSteps: the input prepares the next step's feeds while the current step computes."""
from __future__ import annotations

from collections.abc import Callable

from trainstack.loop import Callback

from ..tower.step import TracedStep

__all__ = ["OverlappedSteps"]


class OverlappedSteps(Callback):
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
