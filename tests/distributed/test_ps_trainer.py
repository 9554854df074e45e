"""DistributedTrainerParameterServer: 1 ps + 2 workers + chief on localhost (ParameterServerStrategy).

Training is asynchronous, so the result is compared with SimpleTrainer's on the same data and
number of steps by accuracy (within 0.05), not weight by weight.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from mw_model import BATCH, Classifier, make_data, weights  # noqa: E402

from trainstack.distributed import DistributedTrainerParameterServer, local_cluster  # noqa: E402
from trainstack.inputs import TFDatasetInput  # noqa: E402
from trainstack.towers import SimpleTrainer, SmartInit  # noqa: E402

JOB = os.path.join(HERE, "ps_job.py")
STEPS, EPOCHS = 50, 2


@functools.cache  # the same reference for both tests when they share a pytest worker
def _simple_accuracy() -> float:
    x, y = make_data()
    xv, yv = make_data(512, seed=1)
    model = Classifier()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=0).repeat().batch(
        BATCH, drop_remainder=True)
    trainer = SimpleTrainer()
    trainer.setup_graph(model.get_input_signature(), TFDatasetInput(dataset), model.build_graph,
                        model.get_optimizer)
    trainer.train(callbacks=[], monitors=[], steps_per_epoch=STEPS, max_epoch=EPOCHS)
    return model.accuracy(xv, yv)


def _launch(out, *extra: str) -> float:
    """Run ps_job.py with 1 ps, 2 workers and a chief; return the chief's validation accuracy."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("TF_CONFIG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "trainstack.distributed.launch", "-n", "2", "--ps", "1", "--chief",
         "--timeout", "150", JOB, "--out", str(out), "--steps", str(STEPS), "--epochs", str(EPOCHS),
         *extra], env=env, capture_output=True, text=True, timeout=200)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "[chief0] chief done" in proc.stdout
    with open(out / "accuracy.txt") as f:
        return float(f.read())


def test_ps_training_reaches_simple_trainers_accuracy(tmp_path) -> None:
    ps_accuracy = _launch(tmp_path)
    simple = _simple_accuracy()
    assert simple > 0.8  # the reference learned something
    assert ps_accuracy >= simple - 0.05, (ps_accuracy, simple)
    # the chief's checkpoint (variables read from the ps task) restores into SimpleTrainer
    latest = tf.train.latest_checkpoint(str(tmp_path))
    assert latest.endswith(f"model-{STEPS * EPOCHS}")
    model = Classifier()
    trainer = SimpleTrainer()
    x, y = make_data(64)
    trainer.setup_graph(model.get_input_signature(),
                        TFDatasetInput(tf.data.Dataset.from_tensor_slices((x, y)).batch(16).repeat()),
                        model.build_graph, model.get_optimizer)
    before = weights(model)
    SmartInit(latest).init(trainer)
    assert not np.allclose(before[0], weights(model)[0])
    xv, yv = make_data(512, seed=1)
    assert model.accuracy(xv, yv) == pytest.approx(ps_accuracy)


def test_the_seeds_distributed_replicated_trainer_form(tmp_path) -> None:
    accuracy = _launch(tmp_path, "--legacy")
    assert accuracy >= _simple_accuracy() - 0.05
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith(f"model-{STEPS * EPOCHS}")


def test_ps_trainer_needs_the_chief_of_a_ps_cluster() -> None:
    cluster = local_cluster(2, num_ps=1, chief=True)
    with pytest.raises(ValueError, match="runs on the chief; this process is worker1"):
        DistributedTrainerParameterServer(cluster, "worker", 1)
    with pytest.raises(ValueError, match=r"lacks \['chief', 'ps'\]"):
        DistributedTrainerParameterServer(local_cluster(2), "worker", 0)


@pytest.mark.parametrize("option, value", [("steps_per_run", 2), ("gradient_accumulation_steps", 2),
                                           ("xla_compile", True), ("mixed_precision", True),
                                           ("skip_nonfinite_steps", True)])
def test_ps_trainer_refuses_the_step_options_its_scheduled_step_has_not(option, value) -> None:
    # refused before anything connects: the cluster below is the chief's, nothing listens
    cluster = local_cluster(1, num_ps=1, chief=True)
    with pytest.raises(ValueError, match=rf"DistributedTrainerParameterServer\({option}={value!r}\): "
                                         r"DistributedTrainerParameterServer does not support this step option"):
        DistributedTrainerParameterServer(cluster, "chief", 0, **{option: value})
    with pytest.raises(TypeError, match=r"unknown step option\(s\) \['xla'\]"):
        DistributedTrainerParameterServer(cluster, "chief", 0, xla=True)
