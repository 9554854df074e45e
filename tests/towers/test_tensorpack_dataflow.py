"""tensorpack's own DataFlows (tensorpack 0.11, ``tensorpack.dataflow``) train unchanged through
trainstack's FeedInput, QueueInput and MultiProcessDataFlow.

Skipped without tensorpack (``pip install tensorpack==0.11``; the nox ``towers`` session
installs it). Importing tensorpack imports TensorFlow and sets TF_* environment variables,
so the training runs in a subprocess, away from the other tests.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorpack") is None,
                                reason="tensorpack is not installed (pip install tensorpack==0.11)")

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from tensorpack.dataflow import BatchData, DataFromList, MapDataComponent
    from trainstack.inputs import FeedInput, MultiProcessDataFlow, QueueInput
    from trainstack.towers import SimpleTrainer, TrainConfig, launch_train_with_config
    sys.path.insert(0, {towers_tests!r})
    from id_model import BatchRecorder, IdClassifier

    N, BATCH = 64, 8

    def examples():
        rng = np.random.default_rng(0)
        points = []
        for i in range(N):
            label = i % 2
            points.append([(rng.normal(size=4) + 2.0 * label).astype("float32"), label, np.int64(i)])
        return points

    def tensorpack_flow():
        # tensorpack's DataFlows end to end: a shuffled list, a component map, batches
        ds = DataFromList(examples(), shuffle=True)
        ds = MapDataComponent(ds, lambda label: np.int32(label), index=1) if sys.argv[1] != "mp" else ds
        return BatchData(ds, BATCH)

    kind = sys.argv[1]
    flow = tensorpack_flow()
    if kind == "feed":
        config = dict(dataflow=flow)
    elif kind == "queue":
        config = dict(data=QueueInput(flow))
    else:  # worker processes each run tensorpack's dataflow and keep their shard of it
        config = dict(data=QueueInput(MultiProcessDataFlow(flow, 2)))
    recorder = BatchRecorder()
    trainer = SimpleTrainer()
    launch_train_with_config(TrainConfig(model=IdClassifier(), callbacks=[recorder], max_epoch=4,
                                         extra_callbacks=[], monitors=[], **config), trainer)
    print(json.dumps({"input": type(trainer.input).__name__, "steps": trainer.global_step,
                      "ids": {str(k): sorted(v) for k, v in recorder.ids.items()},
                      "first": float(np.mean(recorder.costs[:4])), "last": float(np.mean(recorder.costs[-4:]))}))
""")


@pytest.mark.slow
@pytest.mark.parametrize("kind, input_name", [("feed", "FeedInput"), ("queue", "QueueInput"), ("mp", "QueueInput")])
def test_a_tensorpack_dataflow_trains_through_trainstack_inputs(tmp_path, kind, input_name):
    script = tmp_path / "tp_train.py"
    script.write_text(SCRIPT.replace("{towers_tests!r}", repr(os.path.dirname(os.path.abspath(__file__)))))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    out = subprocess.run([sys.executable, str(script), kind], capture_output=True, text=True, timeout=300,
                         env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["input"] == input_name
    assert result["steps"] == 4 * 64 // 8  # steps_per_epoch defaults to len() of tensorpack's BatchData
    assert sorted(result["ids"]) == ["1", "2", "3", "4"]
    for epoch_ids in result["ids"].values():  # each example exactly once per epoch
        assert epoch_ids == list(range(64))
    assert result["last"] < min(0.4, result["first"]), result  # it learned
