"""tensorpack 0.11's ``tensorpack.callbacks.monitor`` (from ``trainstack.callbacks`` and ``trainstack.loop``;
``SendMonitorData`` is tensorpack's; ``CometMLMonitor`` a stand-in listed in ``_replaced``)."""
from __future__ import annotations

import os
from typing import Any

from trainstack.callbacks import JSONWriter, ScalarPrinter, TFEventWriter, logger
from trainstack.loop import MonitorBase, Monitors

from .._replaced import stand_in_names, unprovided

__all__ = ["MonitorBase", "Monitors", "TFEventWriter", "JSONWriter", "ScalarPrinter",
           "SendMonitorData"] + stand_in_names(__name__)


class SendMonitorData(MonitorBase):
    """Runs the shell command ``command.format(**stats)`` once every scalar of ``names`` has a value, after
    each step and epoch (``{validation_error}`` in the command)."""

    def __init__(self, command: str, names: str | list[str]) -> None:
        self.command = command
        self.names = names if isinstance(names, list) else [names]
        self.dic: dict[str, Any] = {}

    def process_scalar(self, name: str, value: float | int) -> None:
        if name in self.names:
            self.dic[name] = value

    def _trigger_step(self) -> None:
        self._trigger()

    def _trigger(self) -> None:
        try:
            values = {k: self.dic[k] for k in self.names}
        except KeyError:
            return
        cmd = self.command.format(**values)
        ret = os.system(cmd)  # noqa: S605 - the user's command, as tensorpack ran it
        if ret != 0:
            logger.error(f"Command {cmd} failed with ret={ret}!")
        self.dic = {}


__getattr__ = unprovided(__name__)
