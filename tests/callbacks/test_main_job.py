"""The README's main job trains for real: loss down epoch by epoch, stats on disk."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_main_job_trains_and_writes_its_stats(tmp_path):
    logdir = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "logistic_regression.py"), "--epochs", "5",
         "--logdir", str(logdir)],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(x) for x in (logdir / "stats.jsonl").read_text().splitlines()]
    epochs = [x for x in lines if "loss/SMA" in x]
    assert [x["epoch_num"] for x in epochs] == [1, 2, 3, 4, 5]
    losses = [x["loss/SMA"] for x in epochs]
    assert all(a > b for a, b in zip(losses, losses[1:])), losses
    assert epochs[-1]["val_accuracy"] > 0.85
    assert epochs[-1]["Throughput/samples_per_sec"] > 0
    assert list(logdir.glob("events.out.tfevents.*")), "no TensorBoard event file"
    assert "final validation accuracy" in result.stderr
