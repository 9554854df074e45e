"""DataParallelInferenceRunner: validation over one inference tower per device.

It must report what InferenceRunner reports on the same data (size-weighted
means; rtol 1e-5), see every validation datapoint exactly once per pass, also
when the pass is not a multiple of the towers (5 batches on 2 and 3 towers),
and run beside a replicated trainer. Runs on logical CPU devices.
"""
from __future__ import annotations

import multigpu_cases as cases
import pytest

from trainstack.inputs import FeedInput
from trainstack.towers import DataParallelInferenceRunner, ScalarStats


@pytest.mark.parametrize("towers", [2, 3])
def test_matches_the_single_tower_runner(cpus, towers):
    cpus.run(cases.data_parallel_inference, towers)


def test_fed_inputs_are_refused():
    with pytest.raises(TypeError, match="feedfree"):
        DataParallelInferenceRunner(FeedInput(cases.make_batches(2)), ScalarStats("cost"), 2)
    runner = DataParallelInferenceRunner(cases.make_batches(2), ScalarStats("cost"), ["/cpu:0", "/cpu:1"])
    assert runner.devices == ["/device:CPU:0", "/device:CPU:1"] and runner.num_towers == 2
