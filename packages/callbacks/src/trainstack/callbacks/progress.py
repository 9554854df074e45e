"""ProgressBar: a tqdm bar per epoch, showing chosen scalars of the step."""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, TextIO

import tqdm

from trainstack.loop import Callback, RunContext, RunValues

__all__ = ["ProgressBar"]


class ProgressBar(Callback):
    """Show the progress of each epoch with a tqdm bar.

    ``names`` are values the step returns (e.g. ``"loss"``), shown after the
    bar. They are fetched only on the steps where the bar will be redrawn
    (and on the last step of the epoch), so that values are not copied to the
    host just to be thrown away. ``file`` (default: tqdm's, stderr) and other
    keyword arguments go to ``tqdm.tqdm``.
    """

    def __init__(self, names: Sequence[str] = (), file: TextIO | None = None,
                 **tqdm_kwargs: Any) -> None:
        if isinstance(names, str) or not isinstance(names, Sequence) or not all(
                isinstance(n, str) for n in names):
            raise TypeError(f"ProgressBar(names=...) expects a list of value names, got {names!r}; "
                            "e.g. ProgressBar(['loss'])")
        self._names = list(names)
        short = [n.rsplit("/", 1)[-1] for n in self._names]  # "tower0/loss" shows as "loss"
        self._labels = short if len(set(short)) == len(short) else list(self._names)
        self._tqdm_kwargs = {"leave": True, "dynamic_ncols": True, "smoothing": 0.5,
                             **tqdm_kwargs, "file": file}
        self._bar: tqdm.tqdm | None = None
        self._fetched_in: tuple[int, int] | None = None  # (epoch, local step) of the last fetch

    def overrides(self, hook: str) -> bool:
        if hook in ("before_run", "after_run"):
            return bool(self._names)
        return super().overrides(hook)

    def _before_epoch(self) -> None:
        self._close()
        total = self.trainer.steps_per_epoch
        if total == 0:
            return
        self._bar = tqdm.tqdm(total=total, initial=self.local_step + 1, **self._tqdm_kwargs)

    def _before_run(self, ctx: RunContext) -> list[str] | None:
        # several hooked runs may make one step: fetch in the first one only
        where = (self.epoch_num, self.local_step)
        if self._bar is None or where == self._fetched_in or not self._will_refresh():
            return None
        self._fetched_in = where
        return self._names

    def _after_run(self, run_context: RunContext, run_values: RunValues) -> None:
        if run_values.results is None or self._bar is None:
            return
        postfix = {}
        for label, name, value in zip(self._labels, self._names, run_values.results):
            try:
                postfix[label] = float(value)
            except (TypeError, ValueError):
                raise TypeError(f"ProgressBar shows scalars only; the step's value {name!r} is "
                                f"{value!r}") from None
        self._bar.set_postfix(postfix, refresh=False)

    def _trigger_step(self) -> None:
        if self._bar is not None:
            self._bar.update(self.trainer.loop.run_size)

    def _after_epoch(self) -> None:
        self._close()

    def _after_train(self) -> None:
        self._close()

    def _will_refresh(self) -> bool:
        """Whether the bar will redraw at the end of this step (tqdm's own test in update())."""
        bar = self._bar
        assert bar is not None
        if bar.disable:
            return False
        if self.local_step == self.trainer.steps_per_epoch - 1:
            return True
        return (bar.n + self.trainer.loop.run_size - bar.last_print_n >= bar.miniters
                and time.time() - bar.last_print_t >= bar.mininterval)

    def _close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
