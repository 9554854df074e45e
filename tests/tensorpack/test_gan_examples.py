"""tensorpack's other GAN examples, ported by the port command and trained as a user runs them.

``WGAN.py``, ``Improved-WGAN.py``, ``BEGAN.py``, ``InfoGAN-mnist.py`` and ``Image2Image.py``, byte for
byte from tensorpack master 1547a54 (``tests/tensorpack/examples/GAN/``), with ``GAN.py`` and
``DCGAN.py`` they import: the folder is ported as a whole (import lines only), and each script runs
in a subprocess under ``run_example.py``, which caps its training to a few steps, on small data in
the format it reads (a folder of JPEGs, MNIST's idx files, a folder of image pairs). Each test reads
what the run wrote (``stats.jsonl``, checkpoints, TensorBoard events) and checks what training did:
the statistics each script summarizes, finite and moving; weights changed; the generated samples'
shapes; WGAN's weight clipping (its callback's TF1 ops, built in ``_setup_graph``); the learning rate
the scripts' ``HyperParamSetter``\\ s found in the variable ``optimizer()`` made. The last test
trains ``GAN.py``'s own ``GANTrainer`` in-process to check that a ``ScheduledHyperParamSetter``
changes the rate that trainer's optimizer applies.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_tensorpack_examples import EXAMPLES, RUNNER, port_folder, run

#: what the port command changes in each script of the folder (import lines only)
PORTED = {"BEGAN.py": 5, "ConditionalGAN-mnist.py": 5, "CycleGAN.py": 4, "DCGAN.py": 4, "DiscoGAN-CelebA.py": 4,
          "GAN.py": 7, "Image2Image.py": 6, "Improved-WGAN.py": 5, "InfoGAN-mnist.py": 6, "WGAN.py": 3}
#: DCGAN.get_args's arguments for the DCGAN-based scripts: 32x32 crops of the JPEGs, resized to 64x64
DCGAN_ARGS = ("--crop-size", "32", "--batch", "8", "--z-dim", "16")


def train(tmp_path: Path, script: str, epochs: int, steps: int, *args, data: Path | None = None) -> tuple:
    """Port the GAN folder, run ``script`` capped to ``epochs`` x ``steps``; its log directory,
    its stats.jsonl rows after each epoch, and its output."""
    assert port_folder(EXAMPLES / "GAN", tmp_path / "ported") == PORTED
    out = run([RUNNER, "--max-epoch", epochs, "--steps-per-epoch", steps, tmp_path / "ported" / script, *args],
              tmp_path, data)
    logdir = tmp_path / "train_log" / Path(script).stem
    rows = [json.loads(line) for line in (logdir / "stats.jsonl").read_text().splitlines()]
    return logdir, [r for r in rows if r["epoch_num"] > 0], out


def check_stats(rows: list[dict], keys: tuple[str, ...], epochs: int, moved: tuple[str, ...] = ()) -> None:
    """One row per epoch, each with ``keys`` finite; ``moved`` changed between the first and last."""
    assert [r["epoch_num"] for r in rows] == list(range(1, epochs + 1)), rows
    for row in rows:
        for key in keys:
            assert np.isfinite(row[key]), (key, row)
    for key in moved:
        assert rows[0][key] != rows[-1][key], key


def checkpoints(logdir: Path) -> dict[int, dict[str, np.ndarray]]:
    """The weights of ``model/g_vars`` and ``model/d_vars`` (GAN.py's collect_variables) in each
    checkpoint ModelSaver wrote, by global step."""
    import tensorflow as tf
    found = {}
    for index in logdir.glob("model-*.index"):
        path = str(index)[:-len(".index")]
        reader = tf.train.load_checkpoint(path)
        found[int(path.rsplit("-", 1)[1])] = {
            n.split("/.ATTRIBUTES")[0]: reader.get_tensor(n) for n, _ in tf.train.list_variables(path)
            if re.fullmatch(r"model/[gd]_vars/\d+/\.ATTRIBUTES/VARIABLE_VALUE", n)}
    return dict(sorted(found.items()))


def changed_weights(logdir: Path, g_vars: int, d_vars: int) -> dict[str, tuple[int, int]]:
    """(changed, all) of g_vars and d_vars between the first and the last checkpoint; asserts there
    are ``g_vars`` and ``d_vars`` weights and that at least 3 in 4 of each changed (a bias followed by
    a normalization gets no gradient; a clipped weight may stay at the bound)."""
    saved = checkpoints(logdir)
    first, last = saved[min(saved)], saved[max(saved)]
    assert len(saved) >= 2 and first.keys() == last.keys(), sorted(saved)
    found = {side: (sum(not np.array_equal(first[n], last[n]) for n in first if n.split("/")[1] == side),
                    sum(n.split("/")[1] == side for n in first)) for side in ("g_vars", "d_vars")}
    assert found["g_vars"][1] == g_vars and found["d_vars"][1] == d_vars, found
    assert all(changed >= 0.75 * total for changed, total in found.values()), found
    return found


def images(logdir: Path, tag: str) -> dict[int, list[np.ndarray]]:
    """The images summarized as ``tag`` (one image: ``tag``; several: ``tag/0``, ``tag/1``, ...) in the
    run's events, by step."""
    import tensorflow as tf
    (events,) = logdir.glob("events.out.tfevents.*")
    found: dict[int, list[np.ndarray]] = {}
    for event in tf.compat.v1.train.summary_iterator(str(events)):
        for value in event.summary.value:
            if value.HasField("image") and (value.tag == tag or value.tag.startswith(f"{tag}/")):
                found.setdefault(event.step, []).append(tf.io.decode_image(value.image.encoded_image_string).numpy())
    return found


def samples(logdir: Path, tag: str, shape: tuple, count: int) -> dict[int, list[np.ndarray]]:
    """The images summarized as ``tag``: ``count`` of ``shape`` at each step they were written."""
    found = images(logdir, tag)
    assert found, tag
    for step, batch in found.items():
        assert len(batch) == count and all(i.shape == shape for i in batch), (tag, step, [i.shape for i in batch])
    return found


def test_wgan_clips_the_critics_weights_with_its_callbacks_tf1_ops(tmp_path):
    import example_data
    example_data.write_jpegs(str(tmp_path / "celeba"), n=32, size=40)
    logdir, rows, out = train(tmp_path, "WGAN.py", 2, 3, "--data", tmp_path / "celeba", *DCGAN_ARGS)
    check_stats(rows, ("d_loss", "g_loss"), 2, moved=("d_loss", "g_loss"))
    # ClipCallback._setup_graph: tf.trainable_variables() filtered by v.op.name, as TF1 named them
    clipped = re.findall(r"Clip (discrim/\S+)", out)
    assert len(clipped) == 16 and "discrim/conv0/W" in clipped and "discrim/bn1/gamma" in clipped, clipped
    saved = checkpoints(logdir)
    assert len(saved) == 2, sorted(saved)
    for weights in saved.values():
        critic = [w for n, w in weights.items() if "/d_vars/" in n]
        generator = [w for n, w in weights.items() if "/g_vars/" in n]
        assert len(critic) == 16 and len(generator) == 18
        # its _trigger_step ran the clip after every step: the critic within [-0.01, 0.01] ...
        assert max(float(np.abs(w).max()) for w in critic) <= 0.01
        # ... at the bound where it was wider (BatchNorm's gamma starts at 1); the generator unclipped
        assert sum(float(np.abs(w).max()) == pytest.approx(0.01) for w in critic) >= 8
        assert max(float(np.abs(w).max()) for w in generator) > 0.5
    changed = changed_weights(logdir, 18, 16)
    samples(logdir, "generated-samples", (64, 64, 3), 8)
    print(f"WGAN.py: d_loss {rows[0]['d_loss']:.4f} -> {rows[-1]['d_loss']:.4f}, {len(clipped)} variables clipped, "
          f"changed {changed}")


def test_improved_wgan_trains_with_its_gradient_penalty(tmp_path):
    import example_data
    example_data.write_jpegs(str(tmp_path / "celeba"), n=32, size=40)
    logdir, rows, _ = train(tmp_path, "Improved-WGAN.py", 2, 3, "--data", tmp_path / "celeba", *DCGAN_ARGS)
    keys = ("d_loss", "g_loss", "gradient_penalty", "gradient_rms")
    check_stats(rows, keys, 2, moved=keys)
    assert all(r["gradient_rms"] > 0 for r in rows)   # tf.gradients of the critic at the interpolates
    changed = changed_weights(logdir, 18, 16)   # the critic: LayerNorm ln1..ln3 (beta, gamma), no BatchNorm
    # g_period=5: every fifth step also runs g_min, a hooked run of its own, so global_step grows faster
    found = samples(logdir, "generated-samples", (64, 64, 3), 8)
    assert sorted(found) == [r["global_step"] for r in rows]
    print("Improved-WGAN.py:", {k: (round(rows[0][k], 3), round(rows[-1][k], 3)) for k in keys}, changed)


def test_began_trains_its_autoencoder_gan_and_its_setter_finds_the_learning_rate(tmp_path):
    import example_data
    example_data.write_jpegs(str(tmp_path / "celeba"), n=32, size=40)
    logdir, rows, out = train(tmp_path, "BEGAN.py", 2, 3, "--data", tmp_path / "celeba", *DCGAN_ARGS)
    keys = ("kt", "losses/loss_pos", "losses/loss_neg", "losses/equilibrium", "losses/measure", "losses/loss_D")
    check_stats(rows, keys, 2, moved=keys)
    # kt.assign_add(1e-3 * eq) under the losses' control dependencies: it moved with each step
    assert 0 < rows[0]["kt"] < rows[1]["kt"], rows
    # StatMonitorParamSetter('learning_rate', ...) set up on the variable BEGAN's optimizer() made
    first = json.loads((logdir / "stats.jsonl").read_text().splitlines()[0])
    assert first["learning_rate"] == pytest.approx(1e-4), first
    assert "cannot find the hyperparameter" not in out
    changed = changed_weights(logdir, 20, 40)   # gen: the decoder; discrim: an encoder and a decoder
    for tag in ("viz/generated-samples", "viz/reconstruct-real", "viz/reconstruct-fake"):
        assert sorted(samples(logdir, tag, (64, 64, 3), 8)) == [3, 6]
    print("BEGAN.py:", {k: (round(rows[0][k], 4), round(rows[-1][k], 4)) for k in keys}, changed)


def test_infogan_mnist_trains_and_writes_its_mutual_information(tmp_path):
    import example_data
    example_data.write_mnist(str(tmp_path / "data"), train=512, test=128)
    logdir, rows, _ = train(tmp_path, "InfoGAN-mnist.py", 2, 3, data=tmp_path / "data")
    keys = ("GAN_loss/discrim/loss", "GAN_loss/gen/loss", "total_d_loss", "total_g_loss",
            "mutual_information/mutual_information", "mutual_information/conditional_entropy/total_entropy",
            "mutual_information/prior_entropy/total_entropy")
    check_stats(rows, keys, 2, moved=keys[:5])
    changed = changed_weights(logdir, 14, 18)
    samples(logdir, "gen", (28, 28, 1), 30)
    print("InfoGAN-mnist.py:", {k: (round(rows[0][k], 3), round(rows[-1][k], 3)) for k in keys}, changed)


def write_pairs(folder: Path, n: int = 8, size: int = 32) -> None:
    """``folder/<i>.jpg``: ``n`` image pairs side by side (``size`` x ``2 size``), what Image2Image.py's
    ``split_input`` cuts in two: a bright disc on a dark background, and its negative."""
    import cv2
    folder.mkdir(parents=True)
    rng = np.random.RandomState(40)
    for i in range(n):
        a = np.empty((size, size, 3), np.uint8)
        a[:] = rng.randint(0, 96, size=3)
        centre = tuple(int(c) for c in rng.randint(size // 3, 2 * size // 3, size=2))
        cv2.circle(a, centre, int(rng.randint(size // 6, size // 3)), (255, 255, 255), -1)
        cv2.imwrite(str(folder / f"{i}.jpg"), np.concatenate([a, 255 - a], axis=1))


def test_image2image_trains_on_image_pairs_and_its_setter_finds_the_learning_rate(tmp_path):
    write_pairs(tmp_path / "pairs")
    logdir, rows, _ = train(tmp_path, "Image2Image.py", 2, 2, "--data", tmp_path / "pairs")
    keys = ("L1_loss", "total_g_loss", "GAN_loss/discrim/loss", "GAN_loss/gen/loss", "GAN_loss/discrim/accuracy")
    check_stats(rows, keys, 2, moved=keys[:4])
    # ScheduledHyperParamSetter('learning_rate', [(200, 1e-4)]) on the variable optimizer() made
    first = json.loads((logdir / "stats.jsonl").read_text().splitlines()[0])
    assert first["epoch_num"] == 0 and first["learning_rate"] == pytest.approx(2e-4), first
    # input | output | fake, 256x256 each (Resize(286) and RandomCrop(256) of each half)
    found = samples(logdir, "input_output_fake", (256, 768, 3), 1)
    assert sorted(found) == [2, 4]
    fake = [found[s][0][:, 512:].astype(float) for s in (2, 4)]
    assert np.abs(fake[0] - fake[1]).mean() > 0.5   # the generator's output changed (grey levels)
    print("Image2Image.py:", {k: (round(rows[0][k], 3), round(rows[-1][k], 3)) for k in keys})


def ported_gan() -> dict:
    """The namespace of the verbatim ``GAN.py``, ported by the port command, run as a module."""
    from trainstack.tensorpack.port import port_source
    path = EXAMPLES / "GAN" / "GAN.py"
    source, _ = port_source(path.read_text(), str(path))
    namespace = {"__name__": "ported_GAN", "__file__": str(path)}
    exec(compile(source, str(path), "exec"), namespace)  # noqa: S102 - the example as its user runs it
    return namespace


def test_a_scheduled_setter_changes_the_rate_gan_pys_trainer_applies():
    """GAN.py's GANTrainer (g_op, then d_op, one optimizer) on a model whose optimizer() makes the
    learning-rate variable, as DCGAN.py, BEGAN.py and Image2Image.py do: ScheduledHyperParamSetter
    finds it by name and its new value is the rate the next steps apply (plain gradient descent:
    each step moves a weight by rate x gradient)."""
    import keras
    import tensorflow as tf

    from trainstack.callbacks import ScheduledHyperParamSetter
    from trainstack.loop import Callback
    from trainstack.tensorpack import tfv1
    from trainstack.tensorpack.input_source import QueueInput

    gan = ported_gan()

    class Model(gan["GANModelDesc"]):
        def __init__(self):
            init = keras.initializers.GlorotUniform(seed=0)
            self.gen = keras.Sequential([keras.layers.Dense(6, activation="tanh", kernel_initializer=init),
                                         keras.layers.Dense(2, kernel_initializer=init)], name="gen")
            self.discrim = keras.Sequential([keras.layers.Dense(6, activation="tanh", kernel_initializer=init),
                                             keras.layers.Dense(1, kernel_initializer=init)], name="discrim")

        def inputs(self):
            return [tf.TensorSpec((None, 2), tf.float32, "real"), tf.TensorSpec((None, 3), tf.float32, "z")]

        def build_graph(self, real, z):
            self.build_losses(self.discrim(real), self.discrim(self.gen(z)))
            self.collect_variables()

        def optimizer(self):
            lr = tfv1.get_variable("learning_rate", initializer=1e-2, trainable=False)
            return tfv1.train.GradientDescentOptimizer(lr)

    class Weights(Callback):
        """The generator's weights after each step."""
        def __init__(self, model):
            self.model, self.seen = model, []

        def _trigger_step(self):
            self.seen.append([v.numpy().copy() for v in self.model.gen.trainable_variables])

    rng = np.random.default_rng(0)
    batch = [(rng.normal(size=(8, 2)) * 0.1 + [1.0, -1.0]).astype(np.float32),
             rng.uniform(-1, 1, size=(8, 3)).astype(np.float32)]
    model = Model()
    trainer = gan["GANTrainer"](QueueInput([batch]), model)   # the same batch at every step
    assert "GradientDescentOptimizer" in repr(trainer.optimizer)   # the Keras stand-in of the one it used
    start = [v.numpy().copy() for v in model.gen.trainable_variables]
    weights = Weights(model)
    trainer.train_with_defaults(callbacks=[ScheduledHyperParamSetter("learning_rate", [(2, 1e-4)]), weights],
                                monitors=[], steps_per_epoch=2, max_epoch=3)
    after = [start, *weights.seen]
    moves = [max(float(np.abs(a - b).max()) for a, b in zip(x, y)) for x, y in zip(after, after[1:])]
    # steps 1-4 at 1e-2; the setter set 1e-4 after epoch 2: steps 5 and 6 move 100 times less
    assert all(m > 0 for m in moves), moves
    ratio = moves[3] / moves[4]
    assert 70 < ratio < 140, moves
    lr = trainer.optimizer.learning_rate
    assert float(lr.numpy()) == pytest.approx(1e-4)   # the variable optimizer() made, read at each step
    print(f"GAN.py's GANTrainer: largest move per step {moves}, ratio at the change {ratio:.1f}")


def test_discogan_celeba_stops_without_a_gpu_as_written(tmp_path):
    """DiscoGAN-CelebA.py asserts ``tf.test.is_gpu_available()`` before it reads its data: on a
    machine without a GPU it stops there, as tensorpack's did (TF1's own function, through tfv1)."""
    assert port_folder(EXAMPLES / "GAN", tmp_path / "ported") == PORTED
    done = subprocess.run([sys.executable, str(RUNNER), "--max-epoch", "1", "--steps-per-epoch", "1",
                           str(tmp_path / "ported" / "DiscoGAN-CelebA.py"), "--data", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert done.returncode != 0
    assert "assert tf.test.is_gpu_available()\nAssertionError" in done.stderr, done.stderr[-3000:]


def test_a_script_callbacks_tf1_graph_runs_on_the_models_variables_in_its_hooks():
    """A callback of the script's own (here inside trainstack's PeriodicTrigger) builds TF1 ops in
    ``_setup_graph`` over ``tf.trainable_variables()``; in its hooks ``tensor.eval()``, ``op.run()``
    and ``tf.get_default_session().run(...)`` compute and assign on the model's variables, each time.
    After training its hooks are its class's again and no session is left as the default."""
    import tensorflow as tf

    from trainstack.callbacks import PeriodicTrigger
    from trainstack.loop import Callback
    from trainstack.tensorpack import tfv1
    from trainstack.tensorpack.input_source import QueueInput

    gan = ported_gan()

    class Model(gan["GANModelDesc"]):
        def inputs(self):
            return [tf.TensorSpec((None, 2), tf.float32, "real"), tf.TensorSpec((None, 3), tf.float32, "z")]

        def build_graph(self, real, z):
            with tfv1.variable_scope("gen"):
                fake = gan_fc("fc", z, 2)
            with tfv1.variable_scope("discrim"):
                self.build_losses(gan_fc("fc", real, 1), gan_fc("fc", fake, 1))
            self.collect_variables()

        def optimizer(self):
            return tfv1.train.GradientDescentOptimizer(0.1)

    def gan_fc(name, x, units):
        with tfv1.variable_scope(name, reuse=tfv1.AUTO_REUSE):
            w = tfv1.get_variable("W", [x.shape[-1], units], initializer=tfv1.ones_initializer())
            return tf.matmul(x, w)

    class Halve(Callback):
        def _setup_graph(self):
            critic = [v for v in tfv1.trainable_variables() if v.op.name.startswith("discrim/")]
            self.names = [v.op.name for v in critic]
            self._sum = tf.add_n([tf.reduce_sum(tf.abs(v)) for v in critic])
            self._op = tf.group(*[tfv1.assign(v, v * 0.5) for v in critic])
            self.seen = []

        def _trigger(self):
            before = self._sum.eval()
            self._op.run()
            self.seen.append((before, tfv1.get_default_session().run({"sum": self._sum})["sum"],
                              float(np.abs(model.d_vars[0].numpy()).sum())))

    rng = np.random.default_rng(0)
    batch = [rng.normal(size=(4, 2)).astype(np.float32), rng.uniform(-1, 1, size=(4, 3)).astype(np.float32)]
    model = Model()
    trainer = gan["GANTrainer"](QueueInput([batch]), model)
    halve = Halve()
    trainer.train_with_defaults(callbacks=[PeriodicTrigger(halve, every_k_epochs=1)], monitors=[],
                                steps_per_epoch=2, max_epoch=3)
    assert halve.names == ["discrim/fc/W"]
    assert len(halve.seen) == 3
    for before, after, variable in halve.seen:
        assert after == pytest.approx(before / 2) and variable == pytest.approx(after)
    assert halve.seen[0][0] != pytest.approx(2.0)   # the steps before it trained the critic (ones at first)
    assert "_trigger" not in vars(halve) and "_setup_graph" not in vars(halve)
    assert tfv1.get_default_session() is None
