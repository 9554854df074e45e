"""ProgressBar: one tqdm bar per epoch, with the chosen values of the step."""
from __future__ import annotations

import io

import pytest
import tqdm

from trainstack.callbacks import ProgressBar
from trainstack.loop import Callback, Trainer


class LossRecorder(Callback):
    def __init__(self):
        self.losses = []

    def _before_run(self, ctx):
        return "loss"

    def _after_run(self, ctx, values):
        self.losses.append(float(values.results))


class CountingStep:
    """A plain step that records what each call was asked to fetch."""

    def __init__(self):
        self.fetched = []

    def run_with_fetches(self, args, fetches, feeds):
        self.fetched.append(tuple(fetches))
        return None, {n: 0.5 for n in fetches}


def test_bar_reaches_the_end_of_each_epoch_and_shows_the_loss(linear_trainer):
    out = io.StringIO()
    recorder = LossRecorder()
    linear_trainer().train([recorder, ProgressBar(["loss"], file=out)], [],
                           steps_per_epoch=5, max_epoch=2)
    text = out.getvalue()

    assert text.count("\n") == 2  # two bars, both closed
    # each bar's last frame is complete and shows the loss of the epoch's last step (tqdm may
    # draw the full bar twice, once on the last update and once on close, when the clock allows)
    first_bar, second_bar = (bar.rsplit("\r", 1)[-1] for bar in text.split("\n")[:2])
    assert "5/5" in first_bar and "5/5" in second_bar
    assert f"loss={tqdm.tqdm.format_num(recorder.losses[4])}" in first_bar
    assert f"loss={tqdm.tqdm.format_num(recorder.losses[9])}" in second_bar


def test_values_are_fetched_only_when_the_bar_is_redrawn():
    trainer = Trainer()
    trainer.train_op = step = CountingStep()
    trainer.train([ProgressBar(["loss"], file=io.StringIO(), mininterval=3600)], [],
                  steps_per_epoch=4, max_epoch=2)
    # never due within the hour: only the last step of each epoch, for the final frame
    assert step.fetched == [(), (), (), ("loss",)] * 2

    trainer = Trainer()
    trainer.train_op = step = CountingStep()
    trainer.train([ProgressBar(["loss"], file=io.StringIO(), mininterval=0)], [],
                  steps_per_epoch=4, max_epoch=1)
    assert step.fetched == [("loss",)] * 4


def test_without_names_the_bar_fetches_nothing_and_stays_off_the_run_hooks():
    trainer = Trainer()
    trainer.train_op = step = CountingStep()
    bar = ProgressBar(file=io.StringIO())
    trainer.train([bar], [], steps_per_epoch=3, max_epoch=1)
    assert bar not in trainer.callbacks.active("before_run")
    assert bar not in trainer.callbacks.active("after_run")
    assert step.fetched == [()] * 3


def test_resumed_mid_epoch_the_bar_starts_at_the_steps_already_done(linear_trainer):
    trainer = linear_trainer()
    trainer.loop.load_state_dict({"starting_epoch": 1, "max_epoch": 2, "steps_per_epoch": 5,
                                  "epoch_num": 2, "local_step": 2, "global_step": 8,
                                  "epoch_finished": False})
    out = io.StringIO()
    trainer.train([ProgressBar(["loss"], file=out)], [], steps_per_epoch=5, max_epoch=2)
    text = out.getvalue()
    assert text.split("\r")[1].startswith(" 60%") and "3/5" in text.split("\r")[1]
    assert "5/5" in text and trainer.global_step == 10


def test_a_crash_closes_the_bar():
    trainer = Trainer()

    def step():
        if trainer.global_step == 2:
            raise RuntimeError("step failed")
        return {"loss": 1.0}

    trainer.train_op = step
    out = io.StringIO()
    bar = ProgressBar(["loss"], file=out)
    with pytest.raises(RuntimeError, match="step failed"):
        trainer.train([bar], [], steps_per_epoch=5, max_epoch=1)
    assert bar._bar is None
    assert out.getvalue().endswith("\n") and "2/5" in out.getvalue()


def test_no_steps_means_no_bar():
    trainer = Trainer()
    trainer.train_op = lambda: {"loss": 1.0}
    out = io.StringIO()
    trainer.train([ProgressBar(["loss"], file=out)], [], steps_per_epoch=0, max_epoch=2)
    assert out.getvalue() == ""


def test_writes_to_stderr_by_default(capsys):
    trainer = Trainer()
    trainer.train_op = lambda: None
    trainer.train([ProgressBar()], [], steps_per_epoch=3, max_epoch=1)
    captured = capsys.readouterr()
    assert "3/3" in captured.err and captured.out == ""


def test_a_value_that_is_not_a_scalar_is_a_clear_error():
    trainer = Trainer()
    trainer.train_op = lambda: {"logits": [1.0, 2.0]}
    with pytest.raises(TypeError, match="ProgressBar shows scalars only; the step's value 'logits'"):
        trainer.train([ProgressBar(["logits"], file=io.StringIO(), mininterval=0)], [],
                      steps_per_epoch=2, max_epoch=1)


def test_names_must_be_a_list_of_names():
    with pytest.raises(TypeError, match=r"ProgressBar\(\['loss'\]\)"):
        ProgressBar("loss")
    assert ProgressBar().chief_only is True
