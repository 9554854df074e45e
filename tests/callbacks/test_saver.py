"""ModelSaver, MinSaver/MaxSaver and the loop state in checkpoints, with a real TF step."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import (
    MaxSaver,
    MinSaver,
    ModelSaver,
    PeriodicTrigger,
    StorageError,
    load_loop_state,
    restore_loop_state,
    unset_logger_dir,
)
from trainstack.loop import Callback, Trainer


class PutStat(Callback):
    """Puts ``values[epoch - 1]`` as scalar ``name`` at each epoch; records the weights then."""

    def __init__(self, name, values):
        self.stat_name, self.values = name, values
        self.weights = {}  # epoch -> (w, b)

    def _trigger(self):
        self.trainer.monitors.put_scalar(self.stat_name, self.values[self.epoch_num - 1])
        self.weights[self.epoch_num] = (self.trainer.w.numpy().copy(), self.trainer.b.numpy().copy())


class FailAtStep(Callback):
    def __init__(self, step):
        self.step = step

    def _trigger_step(self):
        if self.global_step == self.step:
            raise RuntimeError("boom")


def _numbers(directory):
    """The checkpoint numbers present in a directory (by their .index files)."""
    return sorted(int(f[len("model-"):-len(".index")]) for f in os.listdir(directory)
                  if f.startswith("model-") and f.endswith(".index"))


def _restore_wb(directory):
    w, b = tf.Variable(tf.zeros((3, 1))), tf.Variable(tf.zeros((1,)))
    tf.train.Checkpoint(w=w, b=b).restore(tf.train.latest_checkpoint(directory)).expect_partial()
    return w.numpy(), b.numpy()


_RESTORE_SCRIPT = """
import json, sys
import tensorflow as tf
w, b = tf.Variable(tf.zeros((3, 1))), tf.Variable(tf.zeros((1,)))
path = tf.train.latest_checkpoint(sys.argv[1])
tf.train.Checkpoint(w=w, b=b).restore(path).assert_existing_objects_matched().expect_partial()
step = tf.Variable(0, dtype=tf.int64)
tf.train.Checkpoint(loop_state=tf.train.Checkpoint(global_step=step)).restore(path).expect_partial()
print(json.dumps({"path": path, "w": w.numpy().tolist(), "b": b.numpy().tolist(),
                  "global_step": int(step.numpy())}))
"""


def test_checkpoint_restores_with_plain_tensorflow_in_a_new_process(linear_trainer, tmp_path):
    trainer = linear_trainer()
    trainer.train([ModelSaver(checkpoint_dir=str(tmp_path))], [], steps_per_epoch=2, max_epoch=3)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    out = subprocess.run([sys.executable, "-c", _RESTORE_SCRIPT, str(tmp_path)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    restored = json.loads(out.stdout.strip().splitlines()[-1])
    assert restored["path"] == str(tmp_path / "model-6")
    assert restored["global_step"] == 6
    np.testing.assert_array_equal(restored["w"], trainer.w.numpy())
    np.testing.assert_array_equal(restored["b"], trainer.b.numpy())
    assert np.abs(trainer.w.numpy()).sum() > 0  # it trained: not the zeros it started from


def test_max_to_keep_is_honored(linear_trainer, tmp_path):
    trainer = linear_trainer()
    saver = ModelSaver(max_to_keep=2, keep_checkpoint_every_n_hours=None, checkpoint_dir=tmp_path)
    trainer.train([saver], [], steps_per_epoch=2, max_epoch=4)
    assert _numbers(tmp_path) == [6, 8]
    assert tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths == [
        str(tmp_path / "model-6"), str(tmp_path / "model-8")]


def test_loop_state_round_trip(linear_trainer, tmp_path):
    trainer = linear_trainer()
    trainer.train([ModelSaver(checkpoint_dir=tmp_path)], [], steps_per_epoch=2, max_epoch=3)
    state = load_loop_state(tmp_path)
    assert state == trainer.loop.state_dict()
    assert state["global_step"] == 6 and state["epoch_num"] == 3 and state["epoch_finished"] is True

    resumed = linear_trainer()
    assert restore_loop_state(resumed, tmp_path / "model-6") == state
    assert resumed.loop.state_dict() == state
    # the resumed run continues with epoch 4
    resumed.train([], [], steps_per_epoch=2, max_epoch=4)
    assert (resumed.epoch_num, resumed.global_step) == (4, 8)


def test_mid_epoch_trigger_and_final_save_in_after_train(linear_trainer, tmp_path):
    trainer = linear_trainer()
    trainer.train([PeriodicTrigger(ModelSaver(checkpoint_dir=tmp_path), every_k_steps=3)], [],
                  steps_per_epoch=2, max_epoch=2)
    # step 3 by the trigger (inside epoch 2), step 4 in after_train (the final model)
    assert _numbers(tmp_path) == [3, 4]
    mid = load_loop_state(tmp_path / "model-3")
    assert mid == {**mid, "epoch_num": 2, "local_step": 0, "global_step": 3, "epoch_finished": False}
    np.testing.assert_array_equal(_restore_wb(tmp_path)[0], trainer.w.numpy())


def test_no_save_in_after_train_when_training_failed_mid_epoch(linear_trainer, tmp_path):
    trainer = linear_trainer()
    with pytest.raises(RuntimeError, match="boom"):
        trainer.train([ModelSaver(checkpoint_dir=tmp_path), FailAtStep(3)], [],
                      steps_per_epoch=2, max_epoch=3)
    assert _numbers(tmp_path) == [2]


def test_default_directory_is_the_logger_dir(linear_trainer, logger_dir):
    linear_trainer().train([ModelSaver()], [], steps_per_epoch=1, max_epoch=2)
    assert tf.train.latest_checkpoint(logger_dir) == os.path.join(logger_dir, "model-2")


def test_clear_errors(linear_trainer, tmp_path):
    class NoObjects(Trainer):
        pass

    with pytest.raises(AttributeError, match="trainer.checkpoint_objects.*NoObjects has none"):
        NoObjects().setup_callbacks([ModelSaver(checkpoint_dir=tmp_path)], [])

    unset_logger_dir()
    with pytest.raises(ValueError, match="checkpoint_dir=.*set_logger_dir"):
        linear_trainer().setup_callbacks([ModelSaver()], [])

    class BadObjects(Trainer):
        checkpoint_objects = {"w": np.zeros(3)}

    with pytest.raises(TypeError, match=r"checkpoint_objects\['w'\] is ndarray"):
        BadObjects().setup_callbacks([MinSaver("x", checkpoint_dir=tmp_path)], [])
    with pytest.raises(ValueError, match="max_to_keep"):
        ModelSaver(max_to_keep=0)
    with pytest.raises(TypeError, match="checkpoint_dir"):
        ModelSaver(checkpoint_dir=3)
    with pytest.raises(TypeError, match="monitor_stat"):
        MinSaver("")


def test_min_and_max_saver_keep_the_best_epoch(linear_trainer, tmp_path):
    stat = PutStat("val-error", [3.0, 1.0, 2.0])
    trainer = linear_trainer()
    min_saver = MinSaver("val-error", checkpoint_dir=tmp_path)
    max_saver = MaxSaver("val-error", checkpoint_dir=tmp_path)
    trainer.train([stat, min_saver, max_saver], [], steps_per_epoch=2, max_epoch=3)

    w_min, b_min = _restore_wb(tmp_path / "min-val-error")
    np.testing.assert_array_equal(w_min, stat.weights[2][0])
    np.testing.assert_array_equal(b_min, stat.weights[2][1])
    assert not np.array_equal(w_min, trainer.w.numpy())  # not just the last model
    assert load_loop_state(tmp_path / "min-val-error")["global_step"] == 4
    assert min_saver.best == 1.0
    w_max, _ = _restore_wb(tmp_path / "max-val-error")
    np.testing.assert_array_equal(w_max, stat.weights[1][0])
    assert max_saver.best == 3.0
    assert _numbers(tmp_path / "min-val-error") == [4]  # only the best is kept

    # a resumed run must beat the saved best before replacing it
    again = MinSaver("val-error", checkpoint_dir=tmp_path)
    linear_trainer().train([PutStat("val-error", [1.5]), again], [], steps_per_epoch=1, max_epoch=1)
    assert again.best == 1.0
    np.testing.assert_array_equal(_restore_wb(tmp_path / "min-val-error")[0], stat.weights[2][0])


def test_min_saver_that_cannot_write_stops_the_run_naming_its_best_checkpoint(linear_trainer, tmp_path):
    best = tmp_path / "min-val-error"

    class BreakTheDirectory(Callback):  # after epoch 1's best is saved, its directory becomes a file
        def _trigger(self):
            if self.epoch_num == 2:
                os.rename(best, str(best) + ".away")
                best.write_text("")

    trainer = linear_trainer()
    with pytest.raises(StorageError, match=rf"MinSaver could not write the checkpoint {best}/model-4: .*not a "
                                           rf"directory.*The last good checkpoint is {best}/model-2\."):
        trainer.train([PutStat("val-error", [3.0, 1.0, 2.0]), BreakTheDirectory(),
                       MinSaver("val-error", checkpoint_dir=tmp_path)], [], steps_per_epoch=2, max_epoch=3)
    assert trainer.global_step == 4  # epoch 3 never ran
    best.unlink()
    os.rename(str(best) + ".away", best)
    assert _numbers(best) == [2]


def test_missing_stat_warns_and_saves_nothing(linear_trainer, tmp_path, caplog):
    saver = MinSaver("val-error", checkpoint_dir=tmp_path)
    with caplog.at_level(logging.WARNING, logger="trainstack.callbacks"):
        linear_trainer().train([saver], [], steps_per_epoch=1, max_epoch=2)
    assert "no scalar named 'val-error'" in caplog.text
    assert saver.best is None
    assert tf.train.latest_checkpoint(str(tmp_path / "min-val-error")) is None
