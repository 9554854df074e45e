"""tensorpack's GAN trainer (examples/GAN/GAN.py), single-tower and multi-GPU, written as
tensorpack writes it, checked against the same updates written by hand (issue 23, point 10).

The trainer is tensorpack 0.11's ``GANTrainer(input, model, num_gpu)``, the verbatim GAN.py ported
(tf1_gan_cases.py; with several towers its input is GAN.py's ``StagingInput(QueueInput(...))``):
with one tower it builds the graph under ``TowerContext('')`` and minimizes the model's losses;
with several it builds the towers with ``DataParallelBuilder.call_for_each_tower``, averages their
costs with ``tf.add_n(...) * (1.0 / num_gpu)`` and minimizes those. Both minimize g, then d under
``tf.control_dependencies([g_min])``, with one shared optimizer.

The oracle is the same GAN trained by hand with ``tf.GradientTape``: each step, every tower on
its own batch (tower k of step s gets batch ``s * num_gpu + k``), the costs averaged, the
generator's update applied, then the discriminator's (its gradients from the same forward
pass, as TF1 computed them: ``d_min`` depends on ``g_min`` only for when it is applied).
The weights must agree to 1e-6 after every step. On a machine without GPUs the towers run on
CPU devices (the data-parallel trainers' placement: ``/device:CPU:k``); here both towers of the
2-tower case run on ``/cpu:0`` in this process, and on ``/device:CPU:0`` and ``/device:CPU:1``
(``devices=None``) in multigpu_cases.py's worker, which has 4 logical CPU devices.
"""
from __future__ import annotations

import threading

import pytest
import tf1_gan_cases as cases

from trainstack.inputs import QueueInput

STEPS = 6
TIMEOUT = 120


def in_thread(fn, timeout=TIMEOUT):
    result, error = [], []

    def target():
        try:
            result.append(fn())
        except BaseException as e:  # noqa: BLE001
            error.append(e)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"{fn} did not finish in {timeout} s"
    if error:
        raise error[0]
    return result[0]


@pytest.mark.parametrize("num_gpu, devices", [(1, None), (2, ["/cpu:0", "/cpu:0"])])
def test_gan_trainer_makes_the_updates_written_by_hand(num_gpu, devices):
    deviation = in_thread(lambda: cases.compare_with_gradient_tape([], num_gpu, STEPS, devices))
    assert deviation["steps"] == STEPS
    assert deviation["max_abs"] < 1e-6, deviation
    assert deviation["moved"] > 1e-3  # the weights did train
    assert deviation["iterations"] == 2 * STEPS  # one shared optimizer: g_op then d_op each step
    # GAN.py stages its input with several towers: the trainer reads the StagingInput (the outermost
    # source whose callbacks it registered), each tower its own staged batch in the queue's order
    assert deviation["input"] == ("StagingInput" if num_gpu > 1 else "QueueInput")
    if num_gpu > 1:
        assert deviation["tower_devices"] == ["/device:CPU:0"] * num_gpu


def test_the_towers_of_the_multi_gpu_trainer_run_on_their_devices(cpus):
    """devices=None in the worker with 4 logical CPU devices: tower k on /device:CPU:k, each on
    its own batch, the same updates as written by hand."""
    deviation = cpus.run(cases.compare_with_gradient_tape, 2, STEPS, None)
    assert deviation["max_abs"] < 1e-6, deviation
    assert deviation["iterations"] == 2 * STEPS
    assert deviation["tower_devices"] == ["/device:CPU:0", "/device:CPU:1"]
    assert deviation["input"] == "StagingInput"


def test_default_devices_are_the_data_parallel_trainers_and_must_exist():
    """devices=None: tower k on /device:GPU:k, or /device:CPU:k without GPUs (this process has
    one CPU device): a missing device fails while the trainer is built, naming those there are."""
    with pytest.raises(ValueError, match=r"call_for_each_tower\(\): device\(s\) \['/device:CPU:1'\] do not "
                                         r"exist.*logical_cpu_devices"):
        in_thread(lambda: cases.GANTrainer(QueueInput(cases.GANData(2)), cases.Model(), num_gpu=2))


def test_the_graph_builders_of_the_data_parallel_trainers_name_their_replacement():
    from trainstack.tensorpack.tf1 import DataParallelBuilder

    with pytest.raises(NotImplementedError, match="SyncMultiGPUTrainerReplicated"):
        DataParallelBuilder([0, 1])
    with pytest.raises(TypeError, match="device names"):
        DataParallelBuilder.call_for_each_tower([0], lambda: None, devices=[lambda op: "/cpu:0"])
