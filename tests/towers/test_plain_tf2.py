"""The core is plain TensorFlow 2: training, predicting and exporting with ``trainstack.towers``'
SimpleTrainer, and a custom TF2 trainer (examples/gan_toy.py's GANTrainer), replace no TensorFlow or
Keras function.

Each attribute that tensorpack's TF1 emulation (``trainstack.tensorpack.tf1``, not installed in this
session) can replace is checked to be the very same object: from the tracing thread (inside
``build_graph`` and inside ``optimizer()``), and from a second thread that polls while a tower is traced
(the tracing thread waits until it has polled). The list is the room's ``PATCHES`` (its concept
modules' lists), written out here so that this test needs no tensorpack layer.
"""
from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf
from keras.src.optimizers.base_optimizer import BaseOptimizer

from trainstack.callbacks import ModelSaver
from trainstack.inputs import QueueInput
from trainstack.towers import (
    ModelDesc,
    OfflinePredictor,
    PredictConfig,
    ProcessedOptimizer,
    SimpleTrainer,
    TrainConfig,
    export_saved_model,
    launch_train_with_config,
)

_MISSING = object()


def _attribute(owner: Callable[[], object], name: str) -> Callable[[], object]:
    """The attribute as defined on ``owner`` (a class's own ``__dict__`` entry: a method replaced on
    the class, or added where it was missing, shows)."""
    def get() -> object:
        obj = owner()
        return vars(obj).get(name, _MISSING) if isinstance(obj, type) else getattr(obj, name, _MISSING)
    return get


#: (what, getter) of every function the TF1 room patches (its PATCHES, room.py), and the six the issue names
WATCHED = [(f"{where}.{name}", _attribute(owner, name)) for where, owner, names in [
    ("tf.compat.v1", lambda: tf.compat.v1, ["get_variable", "get_collection", "trainable_variables",
                                            "global_variables", "model_variables", "control_dependencies"]),
    ("tf.compat.v1.summary", lambda: tf.compat.v1.summary, ["scalar", "image", "histogram", "text", "merge",
                                                            "merge_all", "audio", "tensor_summary"]),
    ("tf.summary", lambda: tf.summary, ["scalar", "image", "histogram", "text", "audio"]),
    ("tf", lambda: tf, ["add_n", "control_dependencies"]),
    ("tf.math", lambda: tf.math, ["add_n"]),
    ("keras.optimizers.Optimizer", lambda: keras.optimizers.Optimizer, ["minimize"]),
    ("BaseOptimizer", lambda: BaseOptimizer, ["__init__"]),
    ("ProcessedOptimizer", lambda: ProcessedOptimizer, ["minimize"]),
    ("tf.compat.v1.train.Optimizer", lambda: tf.compat.v1.train.Optimizer, ["minimize"]),
    ("tf.compat.v1.Session", lambda: tf.compat.v1.Session, ["__init__"]),
    ("tf.compat.v1.InteractiveSession", lambda: tf.compat.v1.InteractiveSession, ["__init__"]),
] for name in names]


def snapshot() -> list[object]:
    return [get() for _, get in WATCHED]


def changed(before: list[object]) -> list[str]:
    """The names whose object is not the very one in ``before``."""
    return [what for (what, _), old, new in zip(WATCHED, before, snapshot()) if new is not old]


BEFORE = snapshot()  # at import, before any trainstack trainer ran in this process


def test_the_watched_list_holds_tensorflows_and_keras_own_functions():
    assert [w for w, obj in zip(WATCHED, BEFORE) if obj is _MISSING] == [
        WATCHED[[w for w, _ in WATCHED].index("keras.optimizers.Optimizer.minimize")],
        WATCHED[[w for w, _ in WATCHED].index("ProcessedOptimizer.minimize")]]  # absent in Keras 3 / the core
    assert BEFORE[[w for w, _ in WATCHED].index("tf.add_n")] is tf.math.add_n


class Watch:
    """Checks from the tracing thread (``here()``) and from a poller thread (``while_traced()``,
    which the tracing thread enters: it returns once the poller has polled while it waited)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, list[str]]] = []
        self.checks = 0
        self._stop = threading.Event()
        self._inside = threading.Event()
        self._polled_inside = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.is_set():
            inside = self._inside.is_set()
            if diff := changed(BEFORE):
                self.seen.append(("second thread", diff))
            self.checks += 1
            if inside:
                self._polled_inside.set()

    def here(self, where: str) -> None:
        if diff := changed(BEFORE):
            self.seen.append((where, diff))

    def while_traced(self, where: str) -> None:
        self.here(where)
        self._polled_inside.clear()
        self._inside.set()
        assert self._polled_inside.wait(60), "the poller did not poll while the tower was traced"
        self._polled_inside.clear()
        self._inside.clear()
        self.here(where)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)


class Classifier(ModelDesc):
    """A plain TF2 ModelDesc of Keras layers, checking from inside build_graph and optimizer()."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.hidden = keras.layers.Dense(8, activation="relu", name="hidden")
        self.fc = keras.layers.Dense(2, name="fc")

    def inputs(self):
        return [tf.TensorSpec([None, 4], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, x, label):
        self.watch.while_traced("build_graph")
        logits = tf.identity(self.fc(self.hidden(x)), name="logits")
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits),
                              name="cost")

    def optimizer(self):
        self.watch.here("optimizer()")
        return keras.optimizers.SGD(0.1)


def batches(n: int) -> list:
    rng = np.random.default_rng(0)
    return [(rng.normal(size=(8, 4)).astype("float32"), rng.integers(0, 2, size=8).astype("int32"))
            for _ in range(n)]


def test_training_predicting_and_exporting_a_modeldesc_replace_nothing(tmp_path):
    with Watch() as watch:
        trainer = SimpleTrainer()
        config = TrainConfig(model=Classifier(watch), dataflow=batches(3), max_epoch=2, monitors=[],
                             callbacks=[ModelSaver(checkpoint_dir=str(tmp_path / "log"))])
        launch_train_with_config(config, trainer)
        assert trainer.global_step == 6
        predict = PredictConfig(model=Classifier(watch), input_names=["x"], output_names=["logits"],
                                session_init=str(tmp_path / "log"))
        assert OfflinePredictor(predict)(np.ones((2, 4), "float32"))[0].shape == (2, 2)
        export_saved_model(predict, tmp_path / "exported")
        assert (tmp_path / "exported" / "saved_model.pb").exists()
    assert watch.checks > 0
    assert watch.seen == []
    assert changed(BEFORE) == []


def _load_gan_toy():
    path = Path(__file__).resolve().parents[2] / "examples" / "gan_toy.py"
    spec = importlib.util.spec_from_file_location("gan_toy_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_custom_tf2_trainer_in_the_style_of_gan_toy_replaces_nothing():
    gan_toy = _load_gan_toy()

    class WatchedGAN(gan_toy.ToyGAN):
        def build_graph(self, real, z):
            self.watch.while_traced("build_graph")
            return super().build_graph(real, z)

        def optimizers(self):
            self.watch.here("optimizers()")
            return super().optimizers()

    with Watch() as watch:
        model = WatchedGAN(noise_dim=4, hidden=8)
        model.watch = watch
        trainer = gan_toy.GANTrainer(model, QueueInput(gan_toy.RingWithNoise(16, 4, 3)))
        trainer.train_with_defaults(callbacks=[], monitors=[], max_epoch=1, steps_per_epoch=3)
        assert trainer.global_step == 3
    assert watch.checks > 0
    assert watch.seen == []
    assert changed(BEFORE) == []
