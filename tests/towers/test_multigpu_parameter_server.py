"""SyncMultiGPUTrainerParameterServer on 4 logical CPU devices.

Each case runs in a worker process with 4 logical CPU devices (multigpu_cases.py).
"The same first SGD step" means: K towers of batch b trained one step give the
weights SimpleTrainer reaches in one step on the K batches concatenated (batch
K*b), from the same start, within rtol 1e-5 / atol 1e-6 (float32 sums in another
order). The model (two Dense layers) has no batch statistics.
"""
from __future__ import annotations

import multigpu_cases as cases
import pytest

PS = "SyncMultiGPUTrainerParameterServer"


@pytest.mark.parametrize("towers, ps_device", [(2, "cpu"), (4, "gpu"), (3, None)])
def test_parameter_server_takes_the_simple_trainers_first_step(cpus, towers, ps_device):
    assert cpus.run(cases.first_step, PS, towers, ps_device=ps_device) == 1


@pytest.mark.parametrize("ps_device, towers", [("cpu", 2), ("gpu", 4), ("gpu", 2)])
def test_parameter_server_variables_live_on_the_promised_devices(cpus, ps_device, towers):
    cpus.run(cases.ps_placement, ps_device, towers)
