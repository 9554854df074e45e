"""launch_train_with_config and apply_default_prefetch."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import DEFAULT_CALLBACKS, DEFAULT_MONITORS
from trainstack.inputs import FeedInput, QueueInput, StagingInput
from trainstack.loop import Callback, Trainer
from trainstack.towers import (
    ModelDescBase,
    NoOpTrainer,
    RuntimeConfig,
    SimpleTrainer,
    SingleCostTrainer,
    TrainConfig,
    apply_default_prefetch,
    launch_train_with_config,
)


class CostRecorder(Callback):
    """Fetches the main tower's ``cost`` at every step."""

    def __init__(self):
        self.costs = []

    def _before_run(self, ctx):
        return ["cost"]

    def _after_run(self, ctx, values):
        self.costs.append(float(values.results[0]))


def quiet(**kwargs):
    """No default callbacks or monitors: nothing written, nothing printed."""
    return dict(extra_callbacks=[], monitors=[], **kwargs)


def test_simple_trainer_trains_a_dataflow(model, make_df):
    recorder = CostRecorder()
    config = TrainConfig(dataflow=make_df(8), model=model, callbacks=[recorder], max_epoch=3, **quiet())
    trainer = SimpleTrainer()
    launch_train_with_config(config, trainer)
    # tensorpack's rule: a plain SimpleTrainer feeds a dataflow (as the older interface did)
    assert type(trainer.input) is FeedInput
    assert trainer.loop.steps_per_epoch == 8  # the default: the dataflow's size
    assert (trainer.epoch_num, trainer.global_step) == (3, 24)
    assert len(recorder.costs) == 24
    assert np.mean(recorder.costs[-8:]) < 0.5 * np.mean(recorder.costs[:8])


def test_other_trainers_get_a_queue_input(model, make_df):
    config = TrainConfig(dataflow=make_df(5), model=model, max_epoch=2, **quiet())
    trainer = SingleCostTrainer()
    launch_train_with_config(config, trainer)
    assert type(trainer.input) is QueueInput
    assert trainer.global_step == 10



def test_the_input_is_what_the_trainer_declares_not_its_exact_type(model, make_df):
    """A subclass of SimpleTrainer feeds as SimpleTrainer does (its declared default_input);
    one that declares a queue gets a queue."""
    class MySimpleTrainer(SimpleTrainer):
        pass

    class QueueingTrainer(SimpleTrainer):
        def default_input(self, dataflow):
            return QueueInput(dataflow)

    for cls, expected in ((MySimpleTrainer, FeedInput), (QueueingTrainer, QueueInput)):
        config = TrainConfig(dataflow=make_df(4), model=type(model)(), max_epoch=1, **quiet())
        trainer = cls()
        launch_train_with_config(config, trainer)
        assert type(trainer.input) is expected, cls
        assert trainer.global_step == 4


def test_data_input_source_is_used_as_given(model, make_df):
    source = FeedInput(make_df(6))
    config = TrainConfig(data=source, model=model, max_epoch=2, **quiet())
    trainer = SimpleTrainer()
    launch_train_with_config(config, trainer)
    assert trainer.input is source
    assert trainer.loop.steps_per_epoch == 6 and trainer.global_step == 12


def test_explicit_loop_arguments(model, make_df):
    config = TrainConfig(dataflow=make_df(5), model=model, steps_per_epoch=3, starting_epoch=4,
                         max_epoch=6, **quiet())
    trainer = SimpleTrainer()
    epochs = []

    class Epochs(Callback):
        def _before_epoch(self):
            epochs.append(self.epoch_num)

    config.callbacks.append(Epochs())
    launch_train_with_config(config, trainer)
    assert epochs == [4, 5, 6]
    assert trainer.global_step == 9 and trainer.loop.steps_per_epoch == 3


@pytest.mark.parametrize("handle_signals", [True, False])
def test_handle_signals_reaches_the_loop(model, make_df, handle_signals):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are installed from the main thread only")
    seen = []

    def host_handler(signum, frame):  # the handlers of a notebook / sweep / host program
        pass

    class SeeHandlers(Callback):
        def _trigger_step(self):
            seen.append([signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)])

    previous = {s: signal.signal(s, host_handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        config = TrainConfig(dataflow=make_df(2), model=model, callbacks=[SeeHandlers()], max_epoch=1,
                             handle_signals=handle_signals, **quiet())
        assert config.handle_signals is handle_signals
        launch_train_with_config(config, SimpleTrainer())
        assert len(seen) == 2
        assert all((h is host_handler) is not handle_signals for step in seen for h in step)
        assert signal.getsignal(signal.SIGTERM) is signal.getsignal(signal.SIGINT) is host_handler
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    with pytest.raises(TypeError, match=r"TrainConfig\(handle_signals=\.\.\.\) must be True or False, got 'no'"):
        TrainConfig(dataflow=make_df(2), model=model, handle_signals="no")


def test_default_callbacks_and_monitors(model, make_df, logger_dir):
    config = TrainConfig(dataflow=make_df(4), model=model, max_epoch=2)
    trainer = SimpleTrainer()
    launch_train_with_config(config, trainer)
    kinds = {type(cb) for cb in trainer.callbacks.cbs}
    defaults = {type(cb) for cb in DEFAULT_CALLBACKS() + DEFAULT_MONITORS()}
    assert len(defaults) == 7 and defaults <= kinds
    with open(os.path.join(logger_dir, "stats.jsonl")) as f:
        records = [json.loads(line) for line in f]
    assert [r["epoch_num"] for r in records if "cost" in r] == [1, 2]


def test_session_init_is_applied_before_the_first_step(model, make_df):
    kernel = np.full((4, 2), 0.25, "float32")
    bias = np.array([1.0, -1.0], "float32")
    name = model.fc.name
    config = TrainConfig(dataflow=make_df(2), model=model, max_epoch=1,
                         session_init={f"{name}/kernel": kernel, f"{name}/bias": bias}, **quiet())
    trainer = NoOpTrainer()  # runs the steps, changes no variable
    launch_train_with_config(config, trainer)
    assert trainer.global_step == 2
    np.testing.assert_array_equal(model.fc.kernel.numpy(), kernel)
    np.testing.assert_array_equal(model.fc.bias.numpy(), bias)


def test_runtime_config_is_applied_first(model, make_df):
    tf.zeros(1).numpy()  # TensorFlow's devices exist now: a different device layout cannot be set
    config = TrainConfig(dataflow=make_df(2), model=model, max_epoch=1,
                         runtime=RuntimeConfig(logical_cpu_devices=7), **quiet())
    trainer = SimpleTrainer()
    with pytest.raises(RuntimeError, match="logical_cpu_devices"):
        launch_train_with_config(config, trainer)
    assert trainer.train_op is None  # failed before the graph was built

    config = TrainConfig(dataflow=make_df(2), model=type(model)(), max_epoch=1,
                         runtime=RuntimeConfig(soft_placement=True), **quiet())
    trainer = SimpleTrainer()
    launch_train_with_config(config, trainer)
    assert trainer.global_step == 2 and tf.config.get_soft_device_placement()


RUNTIME_SCRIPT = textwrap.dedent("""
    import keras, numpy as np, tensorflow as tf
    from trainstack.towers import (ModelDesc, RuntimeConfig, SimpleTrainer, TrainConfig,
                                   launch_train_with_config)

    class Model(ModelDesc):
        def __init__(self):
            self.fc = keras.layers.Dense(1)
        def inputs(self):
            return [tf.TensorSpec([None, 2], tf.float32, "x")]
        def build_graph(self, x):
            return tf.reduce_mean(tf.square(self.fc(x)))
        def optimizer(self):
            return keras.optimizers.SGD(0.1)

    # the usual order: model, config, trainer, then launch, which applies the runtime first
    config = TrainConfig(dataflow=[(np.ones((4, 2), "float32"),)] * 3, model=Model(), max_epoch=1,
                         extra_callbacks=[], monitors=[],
                         runtime=RuntimeConfig(logical_cpu_devices=3, intra_op_threads=1))
    trainer = SimpleTrainer()
    launch_train_with_config(config, trainer)
    print("RESULT", len(tf.config.list_logical_devices("CPU")),
          tf.config.threading.get_intra_op_parallelism_threads(), trainer.global_step)
""")


def test_runtime_config_takes_effect_in_a_fresh_process():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, "-c", RUNTIME_SCRIPT], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = [line for line in proc.stdout.splitlines() if line.startswith("RESULT")]
    assert result == ["RESULT 3 1 3"], proc.stdout[-2000:]


def test_launch_checks_its_arguments(model, make_df):
    config = TrainConfig(dataflow=make_df(2), model=model, **quiet())
    with pytest.raises(TypeError, match="expects a TrainConfig"):
        launch_train_with_config({"model": model}, SimpleTrainer())
    with pytest.raises(TypeError, match="needs a SingleCostTrainer.*got Trainer"):
        launch_train_with_config(config, Trainer())
    with pytest.raises(TypeError, match="model=.*ModelDesc.*NoneType"):
        launch_train_with_config(TrainConfig(dataflow=make_df(2), **quiet()), SimpleTrainer())

    class NoCost(ModelDescBase):  # a ModelDescBase has no optimizer: not a single-cost model
        def inputs(self):
            return model.inputs()

        def build_graph(self, x, label):
            return tf.reduce_sum(x)

    with pytest.raises(TypeError, match="ModelDesc .*got NoCost"):
        launch_train_with_config(TrainConfig(dataflow=make_df(2), model=NoCost(), **quiet()),
                                 SimpleTrainer())


def test_apply_default_prefetch(make_df):
    df = make_df(3)
    source = QueueInput(df)
    assert apply_default_prefetch(source, SimpleTrainer()) is source
    assert type(apply_default_prefetch(df, SimpleTrainer())) is FeedInput
    assert type(apply_default_prefetch(df, NoOpTrainer())) is QueueInput

    class TwoDevices(NoOpTrainer):
        devices = ["/cpu:0", "/cpu:0"]

    staged = apply_default_prefetch(df, TwoDevices())
    assert isinstance(staged, StagingInput)
    # a FeedInput is fed from Python: nothing to stage
    feed = FeedInput(df)
    assert apply_default_prefetch(feed, TwoDevices()) is feed
