"""tensorpack 0.11's ``tensorpack.callbacks.steps`` (``ProgressBar``: ``trainstack.callbacks``'; ``SessionRunTimeout``:
``trainstack.loop``'s; ``TensorPrinter`` is tensorpack's, fetching by name)."""
from __future__ import annotations

from typing import Any

from trainstack.callbacks import ProgressBar, logger
from trainstack.loop import Callback, SessionRunTimeout

from .._replaced import unprovided

__all__ = ["TensorPrinter", "ProgressBar", "SessionRunTimeout"]


class TensorPrinter(Callback):
    """Logs the value of the named tensors of the training tower after each step (``"<name>: <value>"``)."""

    def __init__(self, names: list[str]) -> None:
        self._names = [n[:-2] if n.endswith(":0") else n for n in names]
        logger.warn("Using tf.print in the graph is much faster than TensorPrinter!")

    def _before_run(self, _: Any) -> list[str]:
        return self._names

    def _after_run(self, _: Any, vals: Any) -> None:
        args = vals.results
        if len(args) != len(self._names):
            raise AssertionError(f"TensorPrinter fetched {len(args)} values for {len(self._names)} names")
        for n, v in zip(self._names, args, strict=True):
            logger.info(f"{n}: {v}")


__getattr__ = unprovided(__name__)
