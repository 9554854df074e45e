"""The README's worked example of the loop's counters is what the loop does (issue 34: the
counters, said once and true): the table under "The counters, with `steps_per_epoch=10`"."""
from __future__ import annotations

from pathlib import Path

from trainstack.loop import Callback, Trainer

README = Path(__file__).resolve().parents[2] / "README.md"


def documented_rows() -> dict[str, tuple[int, int, int]]:
    text = README.read_text(encoding="utf-8")
    table = text[text.index("The counters, with `steps_per_epoch=10`"):]
    rows = {}
    for line in table.splitlines()[2:]:
        line = line.strip()
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] in ("where", "---"):
            continue
        rows[cells[0]] = tuple(int(c) for c in cells[1:])
    return rows


class Recorder(Callback):
    """(epoch_num, local_step, global_step) at each hook of epoch 2's first and last steps."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[int, int, int]] = {}

    def _now(self) -> tuple[int, int, int]:
        return (self.epoch_num, self.local_step, self.global_step)

    def _before_epoch(self) -> None:
        if self.epoch_num == 2:
            self.seen["before_epoch"] = self._now()

    def _before_run(self, ctx):
        if self.epoch_num == 2 and self.local_step in (0, 9):
            self.seen[f"before_run {self.local_step}"] = self._now()

    def _trigger_step(self) -> None:
        if self.epoch_num == 2 and self.local_step in (0, 9):
            self.seen[f"trigger_step {self.local_step}"] = self._now()

    def _trigger_epoch(self) -> None:
        if self.epoch_num == 2:
            self.seen["trigger_epoch"] = self._now()


def test_the_readmes_counter_table_is_what_the_loop_does():
    rows = documented_rows()
    recorder = Recorder()
    trainer = Trainer()
    trainer.train_op = lambda: {}
    trainer.train([recorder], [], steps_per_epoch=10, max_epoch=2)
    seen = recorder.seen
    expected = {
        "`before_epoch`": seen["before_epoch"],
        "`before_run` of the epoch's first step": seen["before_run 0"],
        "`trigger_step` of that step": seen["trigger_step 0"],
        "`before_run` of the epoch's last step": seen["before_run 9"],
        "`trigger_step` of that step, `trigger_epoch`": seen["trigger_step 9"],
    }
    assert seen["trigger_step 9"] == seen["trigger_epoch"]
    assert rows == expected
