"""The TF1 room (trainstack.tensorpack.tf1): TensorFlow and Keras are patched only while a tower is traced.

What a user observes: importing trainstack replaces nothing; a tensorpack-style
script that trains, predicts and exports leaves ``tf``, ``tf.compat.v1``,
``tf.summary`` and ``keras`` as they were, as does a trace that raised; and a
thread that is not tracing sees TensorFlow's own functions while another one
traces. Also: the core holds no registry of the room (its classes override the core's hooks;
nothing rewrites a trainer's ``__init__``) and the ordering
of recorded ``minimize`` calls by ``tf.control_dependencies``.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import ModelSaver, SummaryCollection, summary_collection_scope
from trainstack.tensorpack import tf1
from trainstack.tensorpack.input_source import FeedInput
from trainstack.tensorpack.tf1 import (
    ModelDesc,
    SimpleTrainer,
    TF1CallError,
    TowerContext,
    TowerFunc,
    TowerTrainer,
    add_param_summary,
    get_global_step_var,
    l2_regularizer,
    regularize_cost,
)
from trainstack.towers import (
    ModelExporter,
    OfflinePredictor,
    PredictConfig,
    TrainConfig,
    get_current_tower_context,
    launch_train_with_config,
)
from trainstack.towers.trainers.construction import Constructed

from .conftest import NUM_FEATURES, make_dataflow

PATCHED = [(tf.compat.v1, "get_variable"), (tf.summary, "image"), (tf.summary, "scalar"),
           (tf.summary, "histogram"), (tf.compat.v1.summary, "scalar"), (tf, "control_dependencies")]


def identities():
    """What each name the room can replace is now: the explicit list above and every patch of
    the room's concept modules (Keras' optimizer constructor, the TF1 optimizers' minimize, ...),
    so that a patch added to a concept module is checked too."""
    from trainstack.tensorpack.tf1.room import PATCHES as ROOM_PATCHES

    pairs = [*PATCHED, *((patch.owner(), patch.name) for patch in ROOM_PATCHES)]
    return [id(vars(owner).get(name)) if isinstance(owner, type) else id(getattr(owner, name, None))
            for owner, name in pairs]


def assert_untouched(before):
    assert identities() == before
    assert not hasattr(keras.optimizers.Optimizer, "minimize")


def test_importing_trainstack_replaces_nothing_in_a_fresh_interpreter():
    code = textwrap.dedent("""
        import tensorflow as tf, keras
        ids = (id(tf.compat.v1.get_variable), id(tf.summary.image), id(tf.summary.scalar))
        import trainstack.towers
        from trainstack.towers import *
        import trainstack.tensorpack
        from trainstack.tensorpack import *
        from trainstack.tensorpack.tf1 import *
        assert (id(tf.compat.v1.get_variable), id(tf.summary.image), id(tf.summary.scalar)) == ids
        assert not hasattr(keras.optimizers.Optimizer, 'minimize')
        from keras.src.optimizers.base_optimizer import BaseOptimizer
        assert BaseOptimizer.__init__.__module__ == 'keras.src.optimizers.base_optimizer'
        assert tf.compat.v1.train.AdamOptimizer.minimize.__module__.startswith('tensorflow.')
        # the core holds no registry of the room: importing the tensorpack layer plugs nothing in
        import importlib.util
        assert importlib.util.find_spec('trainstack.towers.tower.extension') is None
        assert importlib.util.find_spec('trainstack.towers.trainers.legacy_hook') is None
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]


class PortedModel(ModelDesc):
    """A tensorpack-style model: regularize_cost, add_param_summary, the step counter."""

    def __init__(self):
        self.fc = keras.layers.Dense(2, name="fc")

    def inputs(self):
        return [tf.TensorSpec([None, NUM_FEATURES], tf.float32, "x"),
                tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, x, label):
        logits = tf.identity(self.fc(x), name="logits")
        cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits))
        wd = regularize_cost("fc/kernel", l2_regularizer(1e-3))
        add_param_summary(("fc/kernel", ["histogram", "rms"]))
        if get_current_tower_context().is_training:  # a schedule: training towers only
            cost = cost + 0.0 * tf.cast(get_global_step_var(), tf.float32)
        return tf.add(cost, wd, name="total_cost")

    def optimizer(self):
        return keras.optimizers.SGD(0.1)


def test_train_predict_export_leave_tensorflow_and_keras_as_they_were(tmp_path):
    before = identities()
    config = TrainConfig(model=PortedModel(), dataflow=make_dataflow(4), max_epoch=2, monitors=[],
                         callbacks=[ModelSaver(checkpoint_dir=str(tmp_path / "log"))])
    trainer = SimpleTrainer()
    launch_train_with_config(config, trainer)
    assert trainer.global_step == 8
    assert_untouched(before)

    predictor = OfflinePredictor(PredictConfig(model=PortedModel(), session_init=str(tmp_path / "log"),
                                               input_names=["x"], output_names=["logits"]))
    (logits,) = predictor(np.ones((3, NUM_FEATURES), np.float32))
    assert logits.shape == (3, 2)
    assert_untouched(before)

    ModelExporter(PredictConfig(model=PortedModel(), session_init=str(tmp_path / "log"),
                                input_names=["x"], output_names=["logits"])).export_serving(
        str(tmp_path / "export"))
    assert (tmp_path / "export" / "saved_model.pb").exists()
    assert_untouched(before)


def test_a_trace_that_raised_leaves_tensorflow_as_it_was():
    before = identities()

    def build(x):
        tf.compat.v1.get_variable("w", shape=[2], partitioner=lambda *a: [1])  # not in a TF2 tower
        return tf.reduce_sum(x)

    tower_func = TowerFunc(build, [tf.TensorSpec([None], tf.float32, "x")])

    def traced(x):
        with TowerContext("tower0", is_training=True):
            return tower_func(x)

    with pytest.raises(TF1CallError, match=r"get_variable\('w', partitioner=...\) in tower 'tower0'"):
        tf.function(traced).get_concrete_function(tf.TensorSpec([None], tf.float32))
    assert_untouched(before)


def test_another_thread_sees_tensorflows_own_functions_while_a_tower_is_traced(tmp_path):
    before = identities()
    inside, release = threading.Event(), threading.Event()
    recorded_inside = SummaryCollection("inside")

    def build(x):
        inside.set()
        assert release.wait(60)
        with summary_collection_scope(recorded_inside):
            tf.summary.scalar("s", tf.reduce_sum(x))  # the tracing thread: emulated (recorded)
        return tf.reduce_sum(x)

    tower_func = TowerFunc(build, [tf.TensorSpec([None], tf.float32, "x")])

    def trace():
        def traced(x):
            with TowerContext("tower0", is_training=True):
                return tower_func(x)
        tf.function(traced).get_concrete_function(tf.TensorSpec([None], tf.float32))

    thread = threading.Thread(target=trace, daemon=True)
    thread.start()
    try:
        assert inside.wait(60)
        assert identities() != before  # the dispatchers are in place while the tower is traced
        # ...and in this thread they are TensorFlow's own: no writer records nothing, a writer writes
        assert not bool(tf.summary.scalar("outside", 1.0))
        writer = tf.summary.create_file_writer(str(tmp_path))
        with writer.as_default(step=3):
            assert bool(tf.summary.scalar("outside", 1.0))
        writer.close()
        assert list(tmp_path.glob("events.out.tfevents.*"))
        assert tf.compat.v1.summary.scalar("v1", tf.constant(1.0)).dtype == tf.string  # TF's own: a Summary
        v = tf.compat.v1.get_variable("outside_w", shape=[2], initializer=tf.zeros_initializer())
        assert isinstance(v, tf.Variable) and v.shape == (2,)
        with pytest.raises(AttributeError, match="minimize"):
            keras.optimizers.SGD(0.1).minimize(tf.constant(1.0), var_list=[v])
    finally:
        release.set()
        thread.join(60)
    assert not thread.is_alive()
    assert [name for name, _, _ in recorded_inside.fetched_summaries()] == ["s"]
    assert_untouched(before)


def test_tf1_calls_outside_any_tower_are_tensorflows_own():
    assert not bool(tf.summary.scalar("x", 1.0))
    v = tf.compat.v1.get_variable("module_level_w", shape=[3], initializer=tf.ones_initializer())
    np.testing.assert_array_equal(v.numpy(), np.ones(3))
    # the room's helpers that need a tower say so instead of doing nothing
    with pytest.raises(RuntimeError, match="must be called inside the tower function"):
        regularize_cost(".*", l2_regularizer(1.0))
    with pytest.raises(RuntimeError, match="must be called inside the tower function"):
        add_param_summary((".*", ["rms"]))


def test_an_eager_tower_context_outside_a_trainers_construction_runs_eagerly():
    tower_func = TowerFunc(lambda x: tf.reduce_sum(x, name="total"), [tf.TensorSpec([None], tf.float32, "x")])
    with TowerContext("", is_training=False):
        out = tower_func(tf.constant([1.0, 2.0]))
    assert float(out.numpy()) == 3.0  # computed now, not recorded into a scratch graph


def test_only_trainers_that_build_their_graph_in_init_are_recorded():
    class Custom(TowerTrainer):
        def __init__(self):
            super().__init__()

    assert TowerTrainer.records_graph_build and Custom.records_graph_build
    # nothing rewrites __init__: the class's own runs, and the core's metaclass enters the
    # trainer's _constructing() hook (the room's recording) around the whole construction
    assert Custom.__init__ is vars(Custom)["__init__"]
    assert Custom.__init__.__qualname__.endswith("Custom.__init__")
    assert isinstance(Custom, Constructed) and isinstance(SimpleTrainer, Constructed)
    for builtin in (SimpleTrainer, *SimpleTrainer.__subclasses__()):
        assert not builtin.records_graph_build
        assert "_records_graph_build" not in vars(vars(builtin).get("__init__", builtin.__init__)), builtin


# -- tf.control_dependencies between recorded minimize() calls -----------------------------------------
BATCH = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)


class TwoLosses(ModelDesc):
    """Two independent losses: ``loss_a`` of ``a`` only, ``loss_b`` of ``b`` only."""

    def __init__(self):
        self.a = tf.Variable([0.5], name="a")
        self.b = tf.Variable([-0.5], name="b")

    def inputs(self):
        return [tf.TensorSpec([None, 2], tf.float32, "x")]

    def build_graph(self, x):
        self.loss_a = tf.reduce_mean(tf.square(x[:, 0:1] * self.a - 1.0), name="loss_a")
        self.loss_b = tf.reduce_mean(tf.square(x[:, 1:2] * self.b - 2.0), name="loss_b")


def expected_with_gradient_tape(apply_a: bool) -> tuple[np.ndarray, np.ndarray]:
    """The same step written with tf.GradientTape: a updated (if apply_a), then b."""
    model, opt = TwoLosses(), keras.optimizers.SGD(0.1)
    opt.build([model.a, model.b])
    with tf.GradientTape(persistent=True) as tape:
        model.build_graph(tf.constant(BATCH))
    if apply_a:
        opt.apply_gradients([(tape.gradient(model.loss_a, model.a), model.a)])
    opt.apply_gradients([(tape.gradient(model.loss_b, model.b), model.b)])
    return model.a.numpy(), model.b.numpy()


class InBlock(TowerTrainer):
    """Two minimize() calls in one tf.control_dependencies block: both depend on a_min."""

    def __init__(self, input, model):
        super().__init__()
        self.register_callback(input.setup(model.get_input_signature()))
        self.tower_func = TowerFunc(model.build_graph, model.inputs())
        with TowerContext("", is_training=True):
            self.tower_func(*input.get_input_tensors())
        opt = keras.optimizers.SGD(0.1)
        a_min = opt.minimize(model.loss_a, var_list=[model.a], name="a_min")
        with tf.control_dependencies([a_min]):
            self.first = opt.minimize(model.loss_b, var_list=[model.b], name="b_first")
            self.second = opt.minimize(model.loss_b, var_list=[model.b], name="b_second")
        self.train_op = self.second


class AfterEmptyBlock(TowerTrainer):
    """A block without minimize(): the minimize() after it depends on nothing."""

    def __init__(self, input, model):
        super().__init__()
        self.register_callback(input.setup(model.get_input_signature()))
        self.tower_func = TowerFunc(model.build_graph, model.inputs())
        with TowerContext("", is_training=True):
            self.tower_func(*input.get_input_tensors())
        opt = keras.optimizers.SGD(0.1)
        a_min = opt.minimize(model.loss_a, var_list=[model.a], name="a_min")
        with tf.control_dependencies([a_min]):
            pass
        self.train_op = opt.minimize(model.loss_b, var_list=[model.b], name="b_min")


@pytest.mark.parametrize("trainer_class, apply_a", [(InBlock, True), (AfterEmptyBlock, False)])
def test_control_dependencies_scope_to_their_block(trainer_class, apply_a):
    before = identities()
    model = TwoLosses()
    trainer = trainer_class(FeedInput([[BATCH]]), model)
    trainer.train_with_defaults(callbacks=[], monitors=[], max_epoch=1, steps_per_epoch=1)
    a, b = expected_with_gradient_tape(apply_a)
    np.testing.assert_allclose(model.a.numpy(), a, rtol=1e-6)
    np.testing.assert_allclose(model.b.numpy(), b, rtol=1e-6)
    assert not np.allclose(model.b.numpy(), [-0.5])
    assert_untouched(before)


def test_emulation_is_the_one_switch_and_nests():
    before = identities()
    with tf1.emulation():
        assert hasattr(keras.optimizers.Optimizer, "minimize")
        with tf1.emulation():
            assert hasattr(keras.optimizers.Optimizer, "minimize")
        assert hasattr(keras.optimizers.Optimizer, "minimize")
    assert_untouched(before)
    # the core has no registry of the room: only this layer's classes enter it, through hooks
    import importlib.util

    assert importlib.util.find_spec("trainstack.towers.tower.extension") is None


def test_the_rooms_readme_table_names_real_modules_and_tests():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    room = root / "packages/tensorpack/src/trainstack/tensorpack/tf1"
    lines = (root / "packages/tensorpack/README.md").read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| TF1 concept"))
    table = lines[header + 2:]
    rows = table[:next((i for i, line in enumerate(table) if not line.startswith("| ")), len(table))]
    assert len(rows) >= 9
    modules_on_disk = {p.name for p in room.iterdir()
                       if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists())} - {"__init__.py"}
    named_modules = set()
    for row in rows:
        _, module_cell, test_cell = [c.strip() for c in row.strip("|").split("|")]
        for module in re.findall(r"`([\w/]+?\.py|[\w]+/)`", module_cell):
            module = module.rstrip("/")
            assert (room / module).exists(), f"README names {module}, not in tf1/"
            named_modules.add(module)
        files = re.findall(r"`(tests/[\w/]+\.py)", test_cell)
        assert files, row
        tests = re.findall(r"(test_[\w]+\.py)::(test_\w+)|`(test_\w+)`", test_cell)
        for path in files:
            assert (root / path).exists(), path
        for file_name, test_name, bare in tests:
            name = test_name or bare
            source = (root / "tests/tensorpack" / (file_name or "test_tf1_room.py")).read_text()
            assert f"def {name}(" in source, f"README names {name}, which does not exist"
    missing = {m for m in modules_on_disk if m not in named_modules and m != "trainable.py"}
    assert not missing, f"tf1/ modules missing from the README's table: {sorted(missing)}"
