"""tensorpack's ``examples/basics/`` scripts, ported by the port command and run as a user runs them.

The scripts in ``tests/tensorpack/examples/basics/`` are tensorpack's own, byte for byte, from
tensorpack master, commit 1547a54e8546494614ca31c984a1bfd1d0e24b77 (``git show
1547a54:examples/basics/<name>``; ruff skips the folder, configured in pyproject.toml). Each test
ports one with the port command (``main([SCRIPT, '--out', DIR])``), checks that only its import
lines changed, and runs the ported script in a subprocess, as ``python SCRIPT [ARGS]``, on small
data written in its dataset's real file format under ``$TENSORPACK_DATASET`` (``example_data.py``:
each class a pattern plus noise, so a model that learned nothing stays near 90% error).
tensorpack's examples train for hours; ``run_example.py`` runs a script's ``__main__`` with
``Trainer.train_with_defaults`` (which ``launch_train_with_config`` calls) capped to 2 epochs of 10
steps, and changes nothing else (export-model.py, one step, runs as it is). What training did is
read from the run's ``stats.jsonl`` (the metric each example validates) and TensorBoard events.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from trainstack.tensorpack.port import main

HERE = Path(__file__).parent
EXAMPLES = HERE / "examples"
RUNNER = HERE / "run_example.py"
TIMEOUT = 300
#: the validation accuracy each training example must reach in 20 steps (10 classes: chance is 0.1)
ACCURACY = 0.8


def port(name: str, out: Path) -> Path:
    """``examples/<name>`` ported into ``out``; asserts only its tensorpack import lines changed."""
    source = EXAMPLES / name
    assert main([str(source), "--out", str(out)]) == 0
    ported = out / source.name
    old, new = source.read_bytes().splitlines(keepends=True), ported.read_bytes().splitlines(keepends=True)
    assert len(old) == len(new)
    changed = [(a, b) for a, b in zip(old, new) if a != b]
    assert changed
    for a, b in changed:
        assert a.startswith((b"from tensorpack", b"import tensorpack")), a
        assert b == a.replace(b"tensorpack", b"trainstack.tensorpack", 1)
    return ported


def run(args: list, cwd: Path, data: Path | None = None) -> str:
    """``python *args`` in ``cwd`` (no GPU, datasets under ``data``); its output, after it succeeded."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.pop("TRAINSTACK_DATASET", None)   # read before TENSORPACK_DATASET
    if data is not None:
        env["TENSORPACK_DATASET"] = str(data)
    done = subprocess.run([sys.executable, *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-5000:]
    return done.stdout + done.stderr


def train(name: str, tmp_path: Path, write_data, epochs: int, steps: int, *args: str) -> list[dict]:
    """Port ``basics/<name>``, write its data, train it capped; the rows of its stats.jsonl."""
    data = tmp_path / "data"
    write_data(str(data))
    script = port(f"basics/{name}", tmp_path / "ported")
    run([RUNNER, "--max-epoch", epochs, "--steps-per-epoch", steps, script, *args], tmp_path, data)
    logdirs = list((tmp_path / "train_log").glob("*/stats.jsonl"))
    assert len(logdirs) == 1, logdirs
    rows = [json.loads(line) for line in logdirs[0].read_text().splitlines()]
    rows = [r for r in rows if r["global_step"] > 0]   # cifar-convnet's setter logs the rate before training too
    assert [(r["epoch_num"], r["global_step"]) for r in rows] == [(e, e * steps) for e in range(1, epochs + 1)]
    return rows


@pytest.mark.parametrize("name, metric", [("mnist-convnet.py", "val_accuracy"),
                                          ("mnist-tflayers.py", "validation_accuracy")])
def test_mnist_examples_train_past_their_validation_accuracy(name, metric, tmp_path):
    import example_data
    rows = train(name, tmp_path, example_data.write_mnist, 2, 10)
    loss = rows[-1]["val_cross_entropy_loss" if metric == "val_accuracy" else "validation_cross_entropy_loss"]
    print(f"{name}: {metric} {rows[-1][metric]:.3f}, validation loss {loss:.3f}")
    assert rows[-1][metric] >= ACCURACY, rows
    ckpt = tmp_path / "train_log" / name[:-3]
    assert (ckpt / "model-20.index").exists()
    if name == "mnist-tflayers.py":  # tf.layers' variables, by TF1's names, summarized and regularized by them
        assert {"param-summary/conv0/kernel-rms", "param-summary/fc1/kernel-rms"} <= set(rows[-1])
        assert rows[-1]["regularize_loss"] > 0
        assert (ckpt / "max-validation_accuracy").is_dir()


def test_mnist_visualizations_writes_its_image_summaries_and_trains(tmp_path):
    import example_data
    import tensorflow as tf
    rows = train("mnist-visualizations.py", tmp_path, example_data.write_mnist, 2, 10)
    print(f"mnist-visualizations.py: validation_accuracy {rows[-1]['validation_accuracy']:.3f}")
    assert rows[-1]["validation_accuracy"] >= ACCURACY, rows
    (events,) = (tmp_path / "train_log" / "mnist-visualizations").glob("events.out.tfevents.*")
    images: dict[str, tuple[int, int]] = {}
    for event in tf.compat.v1.train.summary_iterator(str(events)):
        for value in event.summary.value:
            if value.HasField("image") and event.step == 20:
                images[value.tag] = (value.image.height, value.image.width)
    for k in range(4):
        # conv k's weights tiled [filters * 3, in channels * 3]; its activations, 3 of the batch's
        assert images[f"visualizations/visualize_w_conv{k}_1"] == (32 * 3, (1 if k == 0 else 32) * 3)
        assert {f"visualizations/visualize_act_conv{k}_1/{i}" for i in range(3)} <= set(images)
    assert images["visualizations/input/0"] == (28, 28)


def test_cifar_convnet_trains_past_its_validation_accuracy(tmp_path):
    import example_data
    rows = train("cifar-convnet.py", tmp_path, example_data.write_cifar10, 2, 10, "--classnum", "10")
    print(f"cifar-convnet.py: validation_accuracy {rows[-1]['validation_accuracy']:.3f}, "
          f"validation_cost {rows[0]['validation_cost']:.3f} -> {rows[-1]['validation_cost']:.3f}")
    assert rows[-1]["validation_accuracy"] >= ACCURACY, rows
    assert (tmp_path / "train_log" / "cifar10" / "model-20.index").exists()  # its own logger dir, cifar10


def test_svhn_digit_convnet_trains_past_its_validation_accuracy(tmp_path):
    import example_data
    rows = train("svhn-digit-convnet.py", tmp_path, example_data.write_svhn, 2, 10)
    print(f"svhn-digit-convnet.py: validation_accuracy {rows[-1]['validation_accuracy']:.3f}, "
          f"validation_cost {rows[-1]['validation_cost']:.3f}")
    assert rows[-1]["validation_accuracy"] >= ACCURACY, rows


@contextlib.contextmanager
def exclusive(path: str) -> Iterator[None]:
    """A lock held on ``path`` while inside (export-model.py writes to fixed paths in /tmp)."""
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def laplacian(rgb: np.ndarray) -> np.ndarray:
    """export-model.py's model: the grayscale image convolved with the Laplacian kernel (zero padding)."""
    gray = rgb.astype(np.float64) @ np.array([0.2989, 0.587, 0.114])
    padded = np.pad(gray, 1)
    return (padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:] - 4 * gray)


def test_export_model_trains_exports_and_the_exports_predict(tmp_path):
    import cv2
    import tensorflow as tf
    script = port("basics/export-model.py", tmp_path / "ported")
    run([script], tmp_path)  # its own config: one step
    checkpoint = tmp_path / "train_log" / "export-model" / "checkpoint"
    assert checkpoint.exists()
    rgb = np.random.RandomState(0).randint(0, 256, size=(256, 256, 3)).astype(np.uint8)
    cv2.imwrite(str(tmp_path / "lena.png"), rgb[:, :, ::-1])   # the script reads lena.png in its directory
    expected = np.clip(laplacian(rgb), 0, 255)          # the model on the PNG's RGB channels
    expected_bgr = np.clip(laplacian(rgb[:, :, ::-1]), 0, 255)  # on cv2.imread's BGR array, as the script feeds it

    with exclusive("/tmp/trainstack-export-model.lock"):
        shutil.rmtree("/tmp/exported", ignore_errors=True)
        run([script, "--export", "serving", "--load", checkpoint], tmp_path)
        model = tf.saved_model.load("/tmp/exported")
        png = tf.constant([cv2.imencode(".png", rgb[:, :, ::-1])[1].tobytes()])
        (out,) = model.signatures["serving_default"](input_img_bytes=png).values()
        decoded = tf.io.decode_png(out[0]).numpy()[:, :, 0]
        assert np.abs(decoded.astype(float) - expected).max() <= 1

        run([script, "--export", "compact", "--load", checkpoint], tmp_path)
        run([script, "--apply", "compact", "--load", "/tmp/compact_graph.pb"], tmp_path)   # in a tf.Session
        compact = cv2.imread(str(tmp_path / "applied_compact.png"), cv2.IMREAD_UNCHANGED)
        assert np.abs(compact.astype(float) - expected_bgr).max() <= 1
