"""Multi-tower moving summaries describe the whole step: the mean over the towers.

K towers (on K logical CPU devices) trained through ``launch_train_with_config`` log, in
``stats.jsonl`` and the monitors, the moving average of the cost that SimpleTrainer logs on
the K batches of each step concatenated (within 1e-6), with equal weights; tensorpack logged
tower 0's cost, a K-th of the batch.
"""
from __future__ import annotations

import numpy as np
import pytest
import tower_mean_cases as cases  # noqa: F401 - multigpu_cases' folder is on sys.path (conftest)


@pytest.mark.parametrize("trainer, input_kind", [
    ("SyncMultiGPUTrainerReplicated", "dataflow"), ("SyncMultiGPUTrainerParameterServer", "data")])
def test_k_towers_log_the_cost_of_one_tower_on_the_batches_concatenated(cpus, tmp_path, trainer, input_kind):
    runs = cpus.run(cases.logged_costs, trainer, 2, input_kind, str(tmp_path))
    towers, one = runs["towers"], runs["one"]
    assert towers["names"] == one["names"] == ["cost"]  # no per-tower names: one average
    assert len(towers["stats"]) == len(one["stats"]) == 2
    np.testing.assert_allclose(towers["stats"], one["stats"], rtol=0, atol=1e-6)
    assert towers["monitor"] == towers["stats"] and one["monitor"] == one["stats"]
    for a, b in zip(towers["weights"], one["weights"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # the towers' batches differ: tower 0's cost alone (what was logged before) is another curve
    assert abs(one["stats"][0] - one["stats"][1]) > 1e-3
