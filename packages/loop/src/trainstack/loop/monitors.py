"""Monitors: where training statistics go, and the hub that dispatches them.

A monitor is a callback that also receives data (``process_scalar``,
``process_image``, ``process_event``). The trainer's hub,
``trainer.monitors``, is what callbacks and steps write to; it forwards each
datum to every monitor and keeps the history of scalars.

The hub lives in the loop layer because ``Trainer.setup_callbacks`` builds
it and it needs nothing but Python; the writers (TensorBoard, JSON, console)
live in ``trainstack.callbacks``.
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from .callback import Callback

__all__ = ["MonitorBase", "Monitors"]

# "tower0/cost" and "towerp1/acc" are reported as "cost" and "acc".
_TOWER_PREFIX = re.compile(r"^towerp?[0-9]+/")


class MonitorBase(Callback):
    """Base class of monitors. Runs on every process (``chief_only`` is False)."""

    _chief_only = False

    def process_scalar(self, name: str, value: float | int) -> None:
        """A scalar statistic, at ``self.global_step``."""

    def process_image(self, name: str, value: Any) -> None:
        """An image (an array: HW, HWC or NHWC, values in [0, 255])."""

    def process_event(self, event: Any) -> None:
        """A framework-specific event (e.g. a TensorBoard ``Event`` proto)."""


class Monitors:
    """The hub on ``trainer.monitors``: dispatches data to the monitors, keeps scalar history."""

    def __init__(self, monitors: Sequence[MonitorBase]) -> None:
        for m in monitors:
            if not isinstance(m, MonitorBase):
                raise TypeError(f"{m!r} ({type(m).__name__}) is not a monitor; "
                                "monitors must derive from MonitorBase")
        self.monitors = list(monitors)
        self._history: dict[str, list[float | int]] = defaultdict(list)

    def put_scalar(self, name: str, value: Any) -> None:
        """Record a scalar (a Python or NumPy number, or a 0-d array/tensor)."""
        name = _TOWER_PREFIX.sub("", name)
        value = _to_python_number(name, value)
        self._history[name].append(value)
        for m in self.monitors:
            m.process_scalar(name, value)

    def put_image(self, name: str, value: Any) -> None:
        """Record an image array (HW, HWC or NHWC, values in [0, 255])."""
        name = _TOWER_PREFIX.sub("", name)
        for m in self.monitors:
            m.process_image(name, value)

    def put_event(self, event: Any) -> None:
        """Forward a framework-specific event to the monitors."""
        for m in self.monitors:
            m.process_event(event)

    def get_latest(self, name: str) -> float | int:
        """The last value of scalar ``name``; KeyError naming the known ones if none."""
        history = self._history.get(name)
        if not history:
            raise KeyError(f"no scalar named {name!r} was put in the monitors; "
                           f"known: {sorted(self._history)}")
        return history[-1]

    def get_history(self, name: str) -> list[float | int]:
        """All values of scalar ``name``, oldest first (empty if none)."""
        return list(self._history.get(name, ()))

    def scalar_names(self) -> list[str]:
        """The names of all scalars seen so far."""
        return sorted(self._history)


def _to_python_number(name: str, value: Any) -> float | int:
    if hasattr(value, "numpy"):  # eager tensors
        value = value.numpy()
    if hasattr(value, "item"):  # NumPy scalars and 0-d arrays
        try:
            value = value.item()
        except ValueError:  # more than one element: refused below
            pass
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    raise TypeError(f"scalar {name!r} must be a number, got {value!r} ({type(value).__name__})")
