"""ScalarPrinter: the monitor that prints the scalars to the log."""
from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from trainstack.loop import MonitorBase

__all__ = ["ScalarPrinter"]

logger = logging.getLogger("trainstack.callbacks")


class ScalarPrinter(MonitorBase):
    """Log ``name: value`` for the last value of each scalar put since the last print.

    Prints at each epoch's end (``enable_epoch``) and/or after each step
    (``enable_step``; the epoch's last step is printed with the epoch), and
    at ``before_train`` if scalars were put during setup. ``whitelist`` and
    ``blacklist`` are regular expressions searched in the name, as in
    tensorpack (anchor them with ``^...$`` for a full match): a scalar is
    printed if it matches some whitelist pattern (default: all) and no
    blacklist pattern.
    """

    def __init__(self, enable_step: bool = False, enable_epoch: bool = True,
                 whitelist: Iterable[str] | None = None, blacklist: Iterable[str] | None = None) -> None:
        self._enable_step = enable_step
        self._enable_epoch = enable_epoch
        self._whitelist = None if whitelist is None else _compile("whitelist", whitelist)
        self._blacklist = [] if blacklist is None else _compile("blacklist", blacklist)
        self._latest: dict[str, float] = {}

    def process_scalar(self, name: str, value: float | int) -> None:
        self._latest[name] = float(value)

    def _before_train(self) -> None:
        self._trigger()

    def _trigger_step(self) -> None:
        last_step = self.local_step == self.trainer.steps_per_epoch - 1
        if self._enable_step and not (last_step and self._enable_epoch):
            self._trigger()

    def _trigger_epoch(self) -> None:
        if self._enable_epoch:
            self._trigger()

    def _trigger(self) -> None:
        for name, value in sorted(self._latest.items()):
            if self._shown(name):
                logger.info("%s: %.5g", name, value)
        self._latest = {}

    def _shown(self, name: str) -> bool:
        if self._whitelist is not None and not any(p.search(name) for p in self._whitelist):
            return False
        return not any(p.search(name) for p in self._blacklist)


def _compile(what: str, patterns: Iterable[str]) -> list[re.Pattern]:
    if isinstance(patterns, str):
        patterns = [patterns]
    compiled = []
    for p in patterns:
        if not isinstance(p, str):
            raise TypeError(f"ScalarPrinter {what}: patterns must be strings, got {p!r}")
        try:
            compiled.append(re.compile(p))
        except re.error as e:
            raise ValueError(f"ScalarPrinter {what}: invalid regular expression {p!r}: {e}") from None
    return compiled
