"""Cases of test_multitower_summaries.py, run in the worker process with logical CPU devices
(see multigpu_cases.py, whose worker imports this module by name)."""
from __future__ import annotations

import json
import os
from typing import Any

import multigpu_cases as cases


def logged_costs(devices: list[str], trainer_name: str, towers: int, input_kind: str, logdir: str,
                 steps: int = 3, epochs: int = 2) -> dict[str, Any]:
    """Train ``trainer_name`` on ``towers`` devices (batches of 8), and SimpleTrainer on the
    towers' batches of each step concatenated, from the same initial weights, both through
    ``launch_train_with_config``; return what each logged (``stats.jsonl``, the monitors) and
    the final weights."""
    import keras

    from trainstack.callbacks import set_logger_dir, unset_logger_dir
    from trainstack.inputs import QueueInput
    from trainstack.towers import SimpleTrainer, TrainConfig, launch_train_with_config

    batches = cases.make_batches(steps * towers, batch=8, seed=3)
    joined = [cases.concat(batches[i:i + towers]) for i in range(0, len(batches), towers)]
    runs = {}
    for name, trainer, data in (
            ("towers", cases.make_trainer(trainer_name, devices[:towers]), batches),
            ("one", SimpleTrainer(), joined)):
        keras.utils.set_random_seed(0)  # the same initial weights in both runs
        model = cases.make_model()
        source = {"data": QueueInput(data)} if input_kind == "data" else {"dataflow": data}
        set_logger_dir(os.path.join(logdir, name))
        try:
            launch_train_with_config(TrainConfig(model=model, steps_per_epoch=steps, max_epoch=epochs,
                                                 **source), trainer)
        finally:
            unset_logger_dir()
        with open(os.path.join(logdir, name, "stats.jsonl")) as f:
            records = [json.loads(line) for line in f]
        runs[name] = {"stats": [r["cost"] for r in records], "monitor": trainer.monitors.get_history("cost"),
                      "weights": cases.weights(model), "names": trainer.summary_collection.moving_average_names}
    return runs
