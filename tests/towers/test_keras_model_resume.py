"""A Keras model (ModelDesc.from_keras: Dropout, Adam) on two towers, stopped by SIGTERM mid-epoch
and resumed with AutoResumeTrainConfig, ends with the weights of a run never stopped, bit for bit:
the checkpoint holds the Keras model's variables, its dropout seed state and Adam's slots."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

SCRIPT = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {towers_tests!r})
    from trainstack.towers import RuntimeConfig
    RuntimeConfig(logical_cpu_devices=2, visible_gpus=()).apply()
    import keras, numpy as np
    import keras_model_cases as cases
    from trainstack.callbacks import JSONWriter, ModelSaver, set_logger_dir
    from trainstack.loop import Callback
    from trainstack.towers import (AutoResumeTrainConfig, ModelDesc, SyncMultiGPUTrainerReplicated,
                                   launch_train_with_config)

    logdir, term_at = {logdir!r}, {term_at!r}

    class Stop(Callback):
        def _trigger_step(self):
            if self.global_step == term_at:
                os.kill(os.getpid(), {sigterm})
        def _after_train(self):
            if self.trainer.loop.epoch_finished and self.epoch_num == self.trainer.loop.max_epoch:
                np.savez(os.path.join(logdir, "final.npz"), *[v.numpy() for v in model.variables])

    model = cases.functional(dropout=0.5)
    desc = ModelDesc.from_keras(model, "sparse_categorical_crossentropy", keras.optimizers.Adam(0.01))
    set_logger_dir(logdir, action="k")
    config = AutoResumeTrainConfig(model=desc, dataflow=cases.make_batches(8), callbacks=[ModelSaver(), Stop()],
                                   steps_per_epoch=4, max_epoch=3, monitors=[JSONWriter()])
    launch_train_with_config(config, SyncMultiGPUTrainerReplicated(2))
""")
TOWERS_TESTS = os.path.dirname(os.path.abspath(__file__))


def run(logdir, term_at=None):
    code = SCRIPT.format(towers_tests=TOWERS_TESTS, logdir=str(logdir), term_at=term_at,
                         sigterm=int(signal.SIGTERM))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


def final(logdir):
    with np.load(os.path.join(logdir, "final.npz")) as f:
        return [f[f"arr_{i}"] for i in range(len(f.files))]


@pytest.fixture(scope="module")
def uninterrupted(once_per_session):
    def train(logdir):
        proc = run(logdir)
        assert proc.returncode == 0, proc.stderr[-3000:]

    return final(once_per_session("keras_model_resume_reference", train))


def test_sigterm_mid_epoch_then_resume_ends_with_the_uninterrupted_weights(tmp_path, uninterrupted):
    from trainstack.callbacks import load_loop_state

    stopped = run(tmp_path, term_at=6)  # epoch 2, step 2 of 4
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr[-3000:]
    assert load_loop_state(str(tmp_path))["global_step"] == 6
    assert not os.path.exists(tmp_path / "final.npz")
    resumed = run(tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    got = final(tmp_path)
    assert len(got) == len(uninterrupted) == 5  # 2 kernels, 2 biases, the dropout's seed state
    for a, b in zip(got, uninterrupted):
        np.testing.assert_array_equal(a, b)
