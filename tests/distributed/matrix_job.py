"""The data-parallel matrix with several processes: one process per rank or worker.

    horovodrun -np 2 -H localhost:2 --gloo python tests/distributed/matrix_job.py horovod --out DIR
    python -m trainstack.distributed.launch -n 2 tests/distributed/matrix_job.py multiworker --out DIR

For each input kind of ``tests/towers/matrix_cases.py`` (``--inputs``, default
all), then again with ``steps_per_run=2`` for each kind of ``--steps-per-run-inputs``
(in the same processes: one launch, one TensorFlow start-up per process), every
process trains ``STEPS`` steps through ``launch_train_with_config``
on its shard (``shard_dataflow``: rank ``r`` of ``n`` gets batches ``r, r+n, ...``)
and checks what the single-process matrix checks: its weights equal plain SGD
on each step's batches of all ranks concatenated (step ``s``: batches
``s*n .. s*n+n-1``), and its tower got batch ``s*n + r`` at step ``s``. Each
process writes ``DIR/<kind>[.spr2].rank<r>.json``: ``{"ok": true}`` or the error.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "towers"))  # matrix_cases, multigpu_cases


def make_trainer(kind: str, steps_per_run: int):
    if kind == "horovod":
        from trainstack.distributed import HorovodTrainer  # noqa: PLC0415

        return HorovodTrainer(steps_per_run=steps_per_run)
    from trainstack.distributed import DistributedTrainerReplicated  # noqa: PLC0415

    return DistributedTrainerReplicated(timeout_seconds=60, steps_per_run=steps_per_run)


def run_kind(trainer_kind: str, input_kind: str, steps_per_run: int) -> dict:
    import matrix_cases as cases  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415
    from multigpu_cases import ATOL, RTOL, concat, make_batches, make_model, weights  # noqa: PLC0415

    from trainstack.distributed import shard_dataflow  # noqa: PLC0415
    from trainstack.towers import TrainConfig, launch_train_with_config  # noqa: PLC0415

    trainer = make_trainer(trainer_kind, steps_per_run)
    rank, size = (trainer.rank, trainer.size) if trainer_kind == "horovod" else (
        trainer.cluster_spec.task_index, trainer.num_workers)
    batches = make_batches(cases.STEPS * size, batch=cases.BATCH, seed=size, with_ids=True)
    mine = list(shard_dataflow(batches, rank, size))
    model = make_model(learning_rate=cases.LEARNING_RATE, with_ids=cases.STEPS * size * cases.BATCH)
    recorder = cases._recorder(model)  # noqa: SLF001
    closers: list = []
    try:
        config = TrainConfig(model=model, max_epoch=1, steps_per_epoch=cases.STEPS, callbacks=[recorder],
                             monitors=[], **cases.make_input(input_kind, mine, closers))
        launch_train_with_config(config, trainer)
    finally:
        for close in closers:
            close()
    assert recorder.types == {np.ndarray}, f"after_run values are {recorder.types}, expected NumPy"
    first = [int(ids[0]) // cases.BATCH for ids in recorder.ids]
    expected = cases.fetched_batches(size, rank, steps_per_run)
    if input_kind in cases.UNORDERED:
        first, expected = sorted(first), sorted(expected)
    assert first == expected, f"rank {rank} trained on batches {first}, expected {expected}"
    if input_kind in cases.UNORDERED:
        return {"ok": True}
    steps = [concat(batches[s * size:(s + 1) * size]) for s in range(cases.STEPS)]
    expected = cases.sgd_reference(recorder.before, steps, cases.LEARNING_RATE)
    after = weights(model)
    for a, e in zip(after, expected):
        np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL)
    return {"ok": True, "max_abs_diff": max(float(np.abs(a - e).max()) for a, e in zip(after, expected)),
            "input": type(trainer.input).__name__}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("trainer", choices=["horovod", "multiworker"])
    parser.add_argument("--out", required=True)
    parser.add_argument("--inputs", default=None, help="comma-separated input kinds (default: all)")
    parser.add_argument("--steps-per-run-inputs", default="",
                        help="comma-separated input kinds to run again with steps_per_run=2")
    args = parser.parse_args()
    if args.trainer == "multiworker":
        make_trainer("multiworker", 1)  # the strategy first, before TensorFlow runs any op
    import matrix_cases as cases  # noqa: PLC0415

    kinds = args.inputs.split(",") if args.inputs else cases.INPUTS
    runs = [(kind, 1) for kind in kinds] + [(kind, 2) for kind in filter(None, args.steps_per_run_inputs.split(","))]
    rank = os.environ.get("HOROVOD_RANK") or json.loads(os.environ.get("TF_CONFIG", "{}")).get(
        "task", {}).get("index", 0)
    failed = False
    for kind, steps_per_run in runs:
        suffix = f".spr{steps_per_run}" if steps_per_run > 1 else ""
        try:
            result = run_kind(args.trainer, kind, steps_per_run)
        except Exception as e:  # noqa: BLE001 - reported per kind; the job fails at the end
            result = {"ok": False, "error": f"{type(e).__name__}: {e}"[:2000], "trace": traceback.format_exc()}
            failed = True
        with open(os.path.join(args.out, f"{kind}{suffix}.rank{rank}.json"), "w") as f:
            json.dump(result, f)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
