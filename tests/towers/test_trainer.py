"""SingleCostTrainer and the single-tower trainers: training, fetches, the frozen graph, inputs."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import ProcessTensors
from trainstack.inputs import FeedInput, InputSignatureError, QueueInput
from trainstack.loop import Callback
from trainstack.towers import (
    NoOpTrainer,
    RetraceError,
    SimpleTrainer,
    SingleCostTrainer,
    TowerTrainer,
    TracedStep,
)


def train_costs(trainer, steps=10, epochs=3, callbacks=()):
    """Train; return the cost of every step, fetched by name from the step itself."""
    costs = []
    trainer.train([ProcessTensors(["cost"], lambda c: costs.append(float(c))), *callbacks], [],
                  steps_per_epoch=steps, max_epoch=epochs)
    return costs


@pytest.mark.parametrize("kind", [FeedInput, QueueInput])
def test_trainers_reduce_the_cost(kind, model, dataflow, setup):
    """A dataflow is fed (SimpleTrainer's default); a QueueInput given is used as it is."""
    trainer = setup(SimpleTrainer(), model, dataflow if kind is FeedInput else QueueInput(dataflow))
    costs = train_costs(trainer)
    assert len(costs) == 30
    assert np.mean(costs[-10:]) < 0.5 * np.mean(costs[:10])
    assert int(trainer.optimizer.iterations.numpy()) == 30
    assert isinstance(trainer.input, kind)
    assert trainer.input.size() == len(dataflow)


def test_setup_creates_all_variables_and_traces_once(model, dataflow, setup):
    trainer = setup(SimpleTrainer(), model, dataflow)
    assert isinstance(trainer.train_op, TracedStep)
    assert trainer.train_op.variants == [()]
    assert len(trainer.optimizer.variables) > 0 and trainer.optimizer.built
    assert {id(v) for v in trainer.trainable_variables} == {id(w.value) for w in model.fc.weights}
    before = len(trainer.tower_func.variables)
    train_costs(trainer, steps=3, epochs=1)
    assert len(trainer.tower_func.variables) == before
    # each variant traced once; the plain step is not re-traced by training
    assert trainer.train_op.variants == [(), ("cost",)]
    assert trainer.train_op.trace_counts[("cost",)] == 1
    assert ("tower0", True) in model.contexts


def test_a_retrace_after_setup_is_an_error(model, dataflow, setup):
    trainer = setup(SimpleTrainer(), model, dataflow)
    tf.config.run_functions_eagerly(True)
    try:
        with pytest.raises(RetraceError, match="traced again.*frozen"):
            trainer.train([], [], steps_per_epoch=2, max_epoch=1)
    finally:
        tf.config.run_functions_eagerly(False)


class FetchCheck(Callback):
    """Fetches logits, accuracy and the inputs; checks them against the weights before the step."""

    def __init__(self, model):
        self.model = model
        self.checked = 0

    def _before_run(self, ctx):
        self.kernel = self.model.fc.kernel.numpy()
        self.bias = self.model.fc.bias.numpy()
        return ["logits", "accuracy", "x", "label"]

    def _after_run(self, ctx, values):
        logits, accuracy, x, label = (np.asarray(v) for v in values.results)
        np.testing.assert_allclose(logits, x @ self.kernel + self.bias, rtol=1e-5, atol=1e-5)
        assert accuracy == pytest.approx(np.mean(np.argmax(logits, 1) == label))
        self.checked += 1


def test_callbacks_fetch_by_name_in_the_same_call(model, dataflow, setup):
    trainer = setup(SimpleTrainer(), model, dataflow)
    check = FetchCheck(model)
    train_costs(trainer, steps=5, epochs=2, callbacks=[check])
    assert check.checked == 10
    assert int(trainer.optimizer.iterations.numpy()) == 10  # one step per hooked run


def test_only_hooked_runs_give_fetches_and_feeds(model, dataflow, setup):
    trainer = setup(SimpleTrainer(), model, dataflow)
    with pytest.raises(KeyError, match=r"missing.*hooked_run"):
        trainer.run(trainer.train_op)  # a FeedInput's batches come with hooked runs only
    feeds = {"tower0/x": dataflow[0][0], "tower0/label": dataflow[0][1]}
    cost, values = trainer.train_op.run_with_fetches((), ["accuracy"], feeds)
    assert cost.shape == () and set(values) == {"accuracy"}
    with pytest.raises(KeyError, match="not inputs of the step"):
        trainer.train_op.run_with_fetches((), [], {**feeds, "extra": 1})


def test_an_unknown_fetch_name_is_a_clear_error(model, dataflow, setup):
    trainer = setup(SimpleTrainer(), model, dataflow)
    with pytest.raises(KeyError, match=r"no tensor named 'nope' in tower 'tower0'.*'accuracy'"):
        trainer.train([ProcessTensors(["nope"], print)], [], steps_per_epoch=1, max_epoch=1)


def test_feed_input_with_bad_data_names_the_input(model, make_df, setup):
    bad = [(x[:, :3], y) for x, y in make_df(2)]
    trainer = setup(SimpleTrainer(), model, bad)
    with pytest.raises(InputSignatureError, match=r"input 'x' expects dtype float32 and shape \(None, 4\)"):
        trainer.train([], [], steps_per_epoch=2, max_epoch=1)
    # a float label converts as TF1's feed did (np.asarray(value, int32)); NaN has no int32 value
    floats = [(x, np.full(y.shape, np.nan, "float32")) for x, y in make_df(2)]
    trainer = setup(SimpleTrainer(), type(model)(), floats)
    with pytest.raises(InputSignatureError, match=r"input 'label' expects dtype int32"):
        trainer.train([], [], steps_per_epoch=2, max_epoch=1)


def test_noop_trainer_changes_no_variable(model, dataflow, setup):
    trainer = setup(NoOpTrainer(), model, dataflow)
    before = [v.numpy().copy() for v in trainer.tower_func.variables]
    costs = train_costs(trainer, steps=5, epochs=1)
    assert len(costs) == 5 and all(np.isfinite(costs))
    for old, v in zip(before, trainer.tower_func.variables):
        np.testing.assert_array_equal(old, v.numpy())
    assert int(trainer.optimizer.iterations.numpy()) == 0


def test_noop_trainer_accepts_no_optimizer(model, dataflow):
    trainer = NoOpTrainer()
    trainer.setup_graph(model.get_input_signature(), dataflow, model.build_graph, None)
    assert trainer.optimizer is None and "optimizer" not in trainer.checkpoint_objects
    assert len(train_costs(trainer, steps=2, epochs=1)) == 2


def test_xla_compile_trains_on_cpu(model, dataflow, setup):
    trainer = setup(SimpleTrainer(xla_compile=True), model, dataflow)
    assert trainer.xla_compile
    costs = train_costs(trainer, steps=10, epochs=2)
    assert np.mean(costs[-10:]) < np.mean(costs[:10])


def test_xla_compile_really_compiles(classifier, dataflow, setup):
    class WithPyFunc(classifier):
        def build_graph(self, x, label):
            cost = super().build_graph(x, label)
            zero = tf.numpy_function(lambda: np.float32(0), [], tf.float32)  # XLA cannot compile it
            return cost + tf.reshape(zero, [])

    plain = setup(SimpleTrainer(), WithPyFunc(), dataflow)
    assert len(train_costs(plain, steps=2, epochs=1)) == 2
    compiled = setup(SimpleTrainer(xla_compile=True), WithPyFunc(), dataflow)
    with pytest.raises(tf.errors.InvalidArgumentError, match="compile"):
        compiled.train([], [], steps_per_epoch=2, max_epoch=1)


def test_xla_compile_with_a_queue_input(model, dataflow, setup):
    trainer = setup(SimpleTrainer(xla_compile=True), model, QueueInput(dataflow))
    costs = train_costs(trainer, steps=10, epochs=2)
    assert np.mean(costs[-10:]) < np.mean(costs[:10])


def test_setup_graph_checks_its_arguments(classifier, dataflow):
    model = classifier()
    sig = model.get_input_signature()
    with pytest.raises(TypeError, match="takes an InputSource"):
        SingleCostTrainer().setup_graph(sig, dataflow, model.build_graph, model.get_optimizer)
    with pytest.raises(TypeError, match="Keras optimizer"):
        SimpleTrainer().setup_graph(sig, dataflow, model.build_graph, lambda: "sgd")
    with pytest.raises(ValueError, match="floating-point scalar.*shape \\(None, 2\\)"):
        SimpleTrainer().setup_graph(sig, dataflow, lambda x, label: tf.identity(x[:, :2]),
                                    model.get_optimizer)
    with pytest.raises(ValueError, match="depends on no trainable variable"):
        SimpleTrainer().setup_graph(sig, dataflow, lambda x, label: tf.reduce_sum(x),
                                    model.get_optimizer)
    trainer = SimpleTrainer()
    trainer.setup_graph(sig, dataflow, model.build_graph, model.get_optimizer)
    with pytest.raises(RuntimeError, match="already called"):
        trainer.setup_graph(sig, dataflow, model.build_graph, model.get_optimizer)


def test_before_setup_the_trainer_says_what_is_missing():
    trainer = SimpleTrainer()
    with pytest.raises(AttributeError, match="setup_graph"):
        trainer.tower_func  # noqa: B018
    with pytest.raises(AttributeError, match="setup_graph"):
        trainer.input  # noqa: B018
    with pytest.raises(RuntimeError, match="after setup_graph"):
        trainer.checkpoint_objects  # noqa: B018
    assert trainer.optimizer is None
    with pytest.raises(TypeError, match="train_with_defaults"):
        trainer.train()


def test_queue_input_running_out_stops_training_cleanly(model, dataflow, setup):
    trainer = setup(SimpleTrainer(), model, QueueInput(dataflow, 1))
    assert tf.errors.OutOfRangeError in trainer.stop_exceptions

    class CloseQueue(Callback):
        def _trigger_step(self):
            if self.global_step == 3:
                self.trainer.input.stop()  # closes the queue: dequeues past what it holds fail

    costs = train_costs(trainer, steps=10, epochs=1, callbacks=[CloseQueue()])
    assert 3 <= len(costs) < 10


def test_setup_input_is_the_first_step_of_a_trainer_building_its_own_graph(dataflow):
    """A TowerTrainer subclass that builds its own steps (as examples/gan_toy.py does) sets its
    input up with setup_input: the source is set up, its callbacks registered, once only."""
    trainer = TowerTrainer()
    with pytest.raises(AttributeError, match="no InputSource yet.*setup_input"):
        trainer.input  # noqa: B018
    source = FeedInput(dataflow)
    signature = trainer.setup_input([tf.TensorSpec([None, 4], tf.float32, "x"),
                                     tf.TensorSpec([None], tf.int32, "label")], source)
    assert [s.name for s in signature] == ["x", "label"] and trainer.input is source
    assert source.input_signature == signature
    with pytest.raises(RuntimeError, match="already has an InputSource"):
        trainer.setup_input(signature, FeedInput(dataflow))
    trainer.setup_callbacks([], [])
    names = [type(cb).__name__ for cb in trainer.callbacks.cbs]
    assert names and all(any(type(cb).__name__ == n for n in names) for cb in source.get_callbacks())


def test_a_tf1_graph_block_is_refused_naming_the_tensorpack_layer(model, dataflow):
    """The core trains eagerly: its trainers' entry points refuse a TF1 script's `with tf.Graph().as_default():`
    block (trainstack.tensorpack's trainers run there: tests/tensorpack/test_porting_names.py)."""
    trainer = SimpleTrainer()
    with tf.Graph().as_default(), pytest.raises(RuntimeError, match=r"SimpleTrainer.setup_graph\(\) was called "
                                                                    r"inside a `with tf.Graph\(\).as_default\(\):`.*"
                                                                    r"trainstack.tensorpack's trainers"):
        trainer.setup_graph(model.get_input_signature(), dataflow, model.build_graph, model.get_optimizer)
    assert trainer.train_op is None
