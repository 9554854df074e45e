"""RunOp, RunUpdateOps, ProcessTensors, DumpTensors and CheckNumerics with a real tf.function step."""
from __future__ import annotations

import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import DEFAULT_CALLBACKS
from trainstack.callbacks.graph import CheckNumerics, DumpTensors, ProcessTensors, RunOp, RunUpdateOps
from trainstack.loop import Callback, Trainer


@pytest.fixture
def recording_trainer(linear_trainer):
    """A linear trainer that keeps each step's returned values (as NumPy)."""

    class RecordingTrainer(linear_trainer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.outputs = []

        def run_step(self):
            out = super().run_step()
            self.outputs.append({k: v.numpy() for k, v in out.items()})
            return out

    return RecordingTrainer


class AtStep(Callback):
    """Calls ``action(trainer)`` after global step ``step``."""

    def __init__(self, step, action):
        self._step, self._action = step, action

    def _trigger_step(self):
        if self.global_step == self._step:
            self._action(self.trainer)


def test_run_op_runs_at_the_chosen_moments(linear_trainer):
    counter = tf.Variable(0)
    op = tf.function(lambda: counter.assign_add(1))
    trainer = linear_trainer()
    trainer.train([RunOp(op, run_before=True, run_as_trigger=True, run_step=True)], [],
                  steps_per_epoch=3, max_epoch=2)
    assert int(counter.numpy()) == 1 + 2 + 6

    counter.assign(0)
    only_trigger = RunOp(op, run_before=False, run_as_trigger=True, run_step=False)
    trainer = linear_trainer()
    trainer.train([only_trigger], [], steps_per_epoch=3, max_epoch=2)
    assert int(counter.numpy()) == 2
    # hooks whose flag is off are not called at all
    assert only_trigger not in trainer.callbacks.active("trigger_step")
    assert only_trigger not in trainer.callbacks.active("before_train")


def test_run_op_rejects_non_callables_and_never_running():
    with pytest.raises(TypeError, match="callable"):
        RunOp("update_target_network")
    with pytest.raises(ValueError, match="never run"):
        RunOp(lambda: None, run_before=False, run_as_trigger=False, run_step=False)


def test_run_update_ops_is_a_documented_no_op(linear_trainer, caplog):
    trainer = linear_trainer()
    cb = RunUpdateOps()
    with caplog.at_level(logging.INFO, logger="trainstack.callbacks"):
        trainer.train([cb], [], steps_per_epoch=2, max_epoch=2)
    assert sum("RunUpdateOps does nothing" in r.getMessage() for r in caplog.records) == 1
    assert not any(cb in trainer.callbacks.active(h) for h in ("before_run", "trigger_step"))


def test_run_update_ops_of_the_defaults_says_it_at_debug_only(linear_trainer, caplog):
    """Every run has the default RunUpdateOps: its note is DEBUG; one added by hand stays INFO."""
    default = next(cb for cb in DEFAULT_CALLBACKS() if isinstance(cb, RunUpdateOps))
    with caplog.at_level(logging.DEBUG, logger="trainstack.callbacks"):
        linear_trainer().train([default], [], steps_per_epoch=2, max_epoch=1)
        linear_trainer().train([RunUpdateOps()], [], steps_per_epoch=2, max_epoch=1)
    notes = [r.levelno for r in caplog.records if "RunUpdateOps does nothing" in r.getMessage()]
    assert notes == [logging.DEBUG, logging.INFO]


def test_process_tensors_receives_every_step(recording_trainer):
    trainer, seen = recording_trainer(), []
    trainer.train([ProcessTensors(["loss", "w_norm:0"], lambda loss, n: seen.append((loss, n)))], [],
                  steps_per_epoch=4, max_epoch=2)
    assert len(seen) == 8
    for (loss, norm), out in zip(seen, trainer.outputs):
        assert isinstance(loss, np.ndarray | np.generic)
        assert loss == out["loss"] and norm == out["w_norm"]


def test_dump_tensors_writes_the_last_values_at_each_trigger(recording_trainer, logger_dir):
    trainer = recording_trainer()
    trainer.train([DumpTensors(["loss", "w_norm"])], [], steps_per_epoch=3, max_epoch=2)
    files = sorted(f for f in os.listdir(logger_dir) if f.startswith("DumpTensor"))
    assert files == ["DumpTensor-3.npz", "DumpTensor-6.npz"]
    for name, step in (("DumpTensor-3.npz", 3), ("DumpTensor-6.npz", 6)):
        dump = dict(np.load(os.path.join(logger_dir, name)))
        assert dump == {"loss": trainer.outputs[step - 1]["loss"],
                        "w_norm": trainer.outputs[step - 1]["w_norm"]}


def test_dump_tensors_needs_a_logger_dir(linear_trainer):
    with pytest.raises(RuntimeError, match="set_logger_dir"):
        linear_trainer().train([DumpTensors(["loss"])], [], steps_per_epoch=1, max_epoch=1)


def test_check_numerics_on_fetched_values_fails_at_the_bad_step(linear_trainer):
    trainer = linear_trainer()
    poison = AtStep(3, lambda t: t.loss_offset.assign(float("nan")))
    with pytest.raises(RuntimeError, match=r"'loss' has 1 NaN .* in step 4 \(epoch 2, local step 0\)"):
        trainer.train([poison, CheckNumerics(["loss"])], [], steps_per_epoch=3, max_epoch=3)
    assert trainer.global_step == 4


@pytest.mark.parametrize("run_step, fails_after", [(True, 2), (None, 3)])
def test_check_numerics_on_variables(linear_trainer, run_step, fails_after):
    trainer = linear_trainer()
    poison = AtStep(2, lambda t: t.w.assign(tf.fill((3, 1), np.inf)))
    # (one step after w went bad, b has too)
    with pytest.raises(RuntimeError, match=rf"variable\(s\) \[.*'w'.*\] after step {fails_after}"):
        trainer.train([poison, CheckNumerics(run_step=run_step)], [], steps_per_epoch=3, max_epoch=2)
    assert trainer.global_step == fails_after


def test_check_numerics_passes_healthy_training(linear_trainer):
    trainer = linear_trainer()
    trainer.train([CheckNumerics(["loss", "w_norm"]), CheckNumerics(run_step=True)], [],
                  steps_per_epoch=3, max_epoch=2)
    assert trainer.global_step == 6


def test_check_numerics_bad_arguments():
    with pytest.raises(ValueError, match="names=None"):
        CheckNumerics(["loss"], run_step=True)
    with pytest.raises(ValueError, match="never check"):
        CheckNumerics(run_as_trigger=False)
    with pytest.raises(RuntimeError, match="checkpoint_objects"):
        Trainer().setup_callbacks([CheckNumerics()], [])
