"""The examples train for real, end to end, in a subprocess each (short runs sized for CI).

- examples/digits_convnet.py (the README's main job): a convnet on scikit-learn's digits
  reaches a real validation error bar in 5 epochs, with its stats, TensorBoard events and
  checkpoints on disk, and the learning-rate schedule applied.
- examples/gan_toy.py (a custom trainer): the generated samples move toward the real
  distribution, and samples.png is a real PNG of real vs generated samples.
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

ROOT = Path(__file__).resolve().parents[2]


def run_example(script: str, *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return result


def read_stats(logdir: Path) -> list[dict]:
    return [json.loads(line) for line in (logdir / "stats.jsonl").read_text().splitlines()]


def test_digits_convnet_reaches_its_validation_error(tmp_path):
    logdir = tmp_path / "digits"
    result = run_example("digits_convnet.py", "--epochs", "5", "--logdir", str(logdir))

    records = read_stats(logdir)
    epochs = [r for r in records if "validation_error" in r]
    assert [r["epoch_num"] for r in epochs] == [1, 2, 3, 4, 5]
    errors = [r["validation_error"] for r in epochs]
    # 500 held-out images; chance is 0.9. The full 20-epoch run reaches about 0.01.
    assert errors[-1] < 0.1, errors
    assert errors[-1] < errors[0], errors
    assert all(r["validation_cost"] > 0 for r in epochs)
    # the default monitors got the moving averages of build_graph's add_moving_summary
    assert epochs[-1]["accuracy"] > 0.8 and epochs[-1]["cost"] < epochs[0]["cost"]
    # the schedule: 1e-3, then /3 after epoch 3 and /10 after epoch 4
    rates = [r["learning_rate"] for r in records if "learning_rate" in r]
    np.testing.assert_allclose(rates, [1e-3, 1e-3 / 3, 1e-4], rtol=1e-5)

    assert list(logdir.glob("events.out.tfevents.*")), "no TensorBoard event file"
    latest = tf.train.latest_checkpoint(str(logdir))
    assert latest is not None and latest.endswith("model-200"), latest  # 5 epochs x 40 steps
    names = {name for name, _ in tf.train.list_variables(latest)}
    assert any(n.startswith("model/conv1/") for n in names), sorted(names)[:20]
    assert any(n.startswith("optimizer/") for n in names), sorted(names)[:20]

    out = result.stdout
    assert f"final validation error: {errors[-1]:.4f}" in out
    assert str(logdir / "stats.jsonl") in out and f"checkpoints:      {latest}" in out
    assert f"TensorBoard logs: {logdir}" in out


def test_gan_toy_moves_samples_toward_the_ring_and_draws_them(tmp_path):
    logdir = tmp_path / "gan"
    result = run_example("gan_toy.py", "--epochs", "2", "--steps-per-epoch", "250",
                         "--logdir", str(logdir))

    records = read_stats(logdir)
    distances = [r["samples/mode_distance"] for r in records if "samples/mode_distance" in r]
    assert len(distances) == 3, records  # the untrained generator, then after each epoch
    # untrained samples sit around the origin (~1.6 from the modes on the radius-2 ring)
    assert distances[-1] < 0.7 * distances[0], distances
    # the hooked discriminator step counts the steps; its losses reach the monitors
    assert records[-1]["global_step"] == 500
    assert all(0 < records[-1][k] < 5 for k in ("d_loss", "g_loss"))

    png = logdir / "samples.png"
    image = tf.io.decode_png(tf.io.read_file(str(png))).numpy()
    assert image.shape == (256, 2 * 256 + 8, 3)
    left, right = image[:, :256].reshape(-1, 3), image[:, -256:].reshape(-1, 3)
    blue, orange = np.array([31, 119, 180]), np.array([255, 127, 14])
    assert (left == blue).all(axis=1).sum() > 500, "no real samples drawn on the left"
    assert (right == orange).all(axis=1).sum() > 500, "no generated samples drawn on the right"
    assert not (left == orange).all(axis=1).any() and not (right == blue).all(axis=1).any()

    assert list(logdir.glob("events.out.tfevents.*")), "no TensorBoard event file"
    latest = tf.train.latest_checkpoint(str(logdir))
    assert latest is not None and latest.endswith("model-500"), latest
    saved = tf.train.list_variables(latest)
    for part in ("d_optimizer/", "g_optimizer/"):
        assert any(n.startswith(part) for n, _ in saved), (part, saved[:30])
    # both networks' weights (a variable reachable from several objects is stored once, under
    # whichever path the checkpoint finds first: look for the shapes)
    shapes = [tuple(shape) for _, shape in saved]
    for shape in [(16, 128), (128, 2), (2, 128), (128, 1)]:  # generator in/out, discriminator in/out
        assert shape in shapes, (shape, saved)
    assert str(png) in result.stdout
