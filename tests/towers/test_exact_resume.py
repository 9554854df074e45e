"""Exact resume (issue 15): a run killed with SIGKILL at random moments, inside a checkpoint
write too, and resumed with AutoResumeTrainConfig until it finishes ends with the weights of
an uninterrupted run, bit for bit on the CPU.

What makes that hold: the checkpoint has the weights, the optimizer's slots, the loop state
and the model's random state (Dropout's SeedGenerator); the input resumes after the
datapoints the saved steps used (a shuffling dataflow with a fixed seed replays its passes).
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    sys.path.insert(0, {towers_tests!r})
    import keras, numpy as np, tensorflow as tf
    from conftest import make_dataflow
    from trainstack.callbacks import JSONWriter, ModelSaver, PeriodicTrigger, set_logger_dir
    from trainstack.dataflow import DataFromList, fix_rng_seed
    from trainstack.loop import Callback
    from trainstack.inputs import TFDatasetInput
    from trainstack.towers import AutoResumeTrainConfig, ModelDesc, SimpleTrainer, launch_train_with_config

    logdir, data = {logdir!r}, {data!r}
    kill_in_save = int(os.environ.get("KILL_IN_SAVE", "0"))
    if kill_in_save:  # SIGKILL after the checkpoint's files are written, before they are recorded
        record, saves = tf.train.CheckpointManager._record_state, []
        def record_state(self):
            saves.append(1)
            if len(saves) == kill_in_save:
                os.kill(os.getpid(), signal.SIGKILL)
            record(self)
        tf.train.CheckpointManager._record_state = record_state

    keras.utils.set_random_seed(1)
    fix_rng_seed(7)

    class Model(ModelDesc):
        def __init__(self):
            self.fc = keras.layers.Dense(8, kernel_initializer=keras.initializers.GlorotUniform(seed=1))
            self.drop = keras.layers.Dropout(0.5, seed=3)
            self.out = keras.layers.Dense(2, kernel_initializer=keras.initializers.GlorotUniform(seed=2))
        def inputs(self):
            return [tf.TensorSpec([None, 4], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]
        def build_graph(self, x, label):
            logits = self.out(self.drop(tf.nn.relu(self.fc(x)), training=self.training))
            return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits),
                                  name="cost")
        def optimizer(self):
            return keras.optimizers.Adam(0.01)

    class Progress(Callback):
        # the last step reached (read after a kill), and a pause so that kills land mid-run
        def _before_train(self):
            open(os.path.join(logdir, "started"), "w").close()
        def _trigger_step(self):
            with open(os.path.join(logdir, "reached.tmp"), "w") as f:  # replaced at once: a kill
                f.write(str(self.global_step))                          # never leaves it empty
            os.replace(os.path.join(logdir, "reached.tmp"), os.path.join(logdir, "reached"))
            time.sleep(0.02)
        def _after_train(self):
            if self.trainer.loop.epoch_finished and self.epoch_num == self.trainer.loop.max_epoch:
                module = self.trainer.checkpoint_objects["model"]
                np.save(os.path.join(logdir, "final.npy"),
                        np.concatenate([v.numpy().ravel() for v in module.trainable_variables]))

    set_logger_dir(logdir, action="k")
    df = DataFromList(make_dataflow(10), shuffle=True)
    config = AutoResumeTrainConfig(
        model=Model(), callbacks=[Progress(), PeriodicTrigger(ModelSaver(max_to_keep=3), every_k_steps=4)],
        steps_per_epoch=7, max_epoch=6, monitors=[JSONWriter()],
        **(dict(dataflow=df) if data == "dataflow" else dict(data=TFDatasetInput(df))))
    launch_train_with_config(config, SimpleTrainer())
""")
TOWERS_TESTS = os.path.dirname(os.path.abspath(__file__))
TOTAL_STEPS = 42


def start(logdir, data="dataflow", kill_in_save=0):
    code = SCRIPT.format(towers_tests=TOWERS_TESTS, logdir=str(logdir), data=data)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "KILL_IN_SAVE": str(kill_in_save)}
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def read_int(path):
    try:
        with open(path) as f:
            return int(f.read() or 0)
    except FileNotFoundError:
        return 0


@pytest.fixture(scope="module")
def uninterrupted(once_per_session):
    """The final weights of the run never killed: trained once for all of xdist's workers."""
    def train(logdir):
        proc = start(logdir)
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]

    return np.load(once_per_session("exact_resume_reference", train) / "final.npy")


def kill_and_resume_until_done(logdir, seed, data="dataflow", kill_in_save=0, kills=3):
    """Run; SIGKILL it 1-12 steps after where it started (plus up to 30 ms: inside a step or a
    save); resume; ``kills`` times, then let the run finish. Returns the steps each kill lost
    (steps reached minus the step the next run resumed from)."""
    from trainstack.callbacks import load_loop_state

    rng, lost = random.Random(seed), []

    def resume_point():
        try:
            return load_loop_state(logdir)["global_step"]
        except FileNotFoundError:
            return 0

    for run in range(kills + 1):
        (logdir / "reached").unlink(missing_ok=True)
        proc = start(logdir, data, kill_in_save if run == 0 else 0)
        if run < kills and not (run == 0 and kill_in_save):
            target, deadline = resume_point() + rng.randint(1, 12), time.time() + 120
            while read_int(logdir / "reached") < target and proc.poll() is None and time.time() < deadline:
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.03))
            proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=300)
        if run == kills:
            assert proc.returncode == 0, err[-3000:]
            return lost
        assert proc.returncode == -signal.SIGKILL, err[-3000:]
        lost.append(read_int(logdir / "reached") - resume_point())
    raise AssertionError("unreachable")


@pytest.mark.parametrize("seed", range(5))
def test_kill_9_at_random_moments_then_resume_ends_with_the_uninterrupted_weights(tmp_path, seed,
                                                                                   uninterrupted):
    lost = kill_and_resume_until_done(tmp_path, seed)
    final = np.load(tmp_path / "final.npy")
    print(f"seed {seed}: steps lost per kill {lost}; max abs diff {np.abs(final - uninterrupted).max()}")
    assert np.array_equal(final, uninterrupted)
    assert len(lost) == 3 and all(0 <= n <= 4 for n in lost), lost  # a checkpoint every 4 steps


def test_a_kill_inside_a_checkpoint_write_resumes_from_the_previous_checkpoint(tmp_path, uninterrupted):
    # the third save (step 12) dies after its files are written, before the state file names it
    lost = kill_and_resume_until_done(tmp_path, seed=0, kill_in_save=3, kills=1)
    assert lost == [12 - 8]
    assert np.array_equal(np.load(tmp_path / "final.npy"), uninterrupted)


def test_a_tf_data_input_resumes_at_its_position_too(tmp_path, uninterrupted):
    # TFDatasetInput over the same dataflow: the resumed iterator is advanced in the graph
    lost = kill_and_resume_until_done(tmp_path, seed=11, data="tfdataset", kills=2)
    assert len(lost) == 2
    assert np.array_equal(np.load(tmp_path / "final.npy"), uninterrupted)
