"""Checkpoint contents are declared, not guessed, and a resume never trains on fresh weights
(issue 35, points 1 and 2).

Each test is a user's script run twice (save, then resume after an edit): a plain tower function
whose closure variable is renamed, a custom trainer whose optimizer attribute is renamed, a
ModelDesc that gained a layer. With the owner declared (``TowerFunc(owner=...)``, the trainer's
``declare_checkpoint_objects``) the checkpoint keeps its keys; without, resuming from the run's
own checkpoint stops with an error naming the variables and the checkpoint. Loading a foreign
checkpoint (SmartInit of a file) still only warns, with the list.
"""
from __future__ import annotations

import logging

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import ModelSaver
from trainstack.inputs import FeedInput
from trainstack.loop import Callback
from trainstack.towers import (
    AutoResumeTrainConfig,
    CheckpointInit,
    ModelDesc,
    ResumeError,
    SimpleTrainer,
    SmartInit,
    TowerContext,
    TowerFunc,
    TowerTrainer,
    TracedStep,
    TrainConfig,
    launch_train_with_config,
)

STEPS = 4  # steps per epoch
SIGNATURE = [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.float32, "y")]


def data(n=STEPS, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        x = rng.normal(size=(8, 3)).astype(np.float32)
        out.append([x, x.sum(1).astype(np.float32)])
    return out


def values(variables):
    return [np.array(v.numpy()) for v in variables]


class StartProbe(Callback):
    """What the run starts from, after initialization: global_step and the given variables."""

    def __init__(self, variables):
        self.variables = variables

    def _before_train(self):
        self.start_step = self.global_step
        self.start_values = values(self.variables())


def model_keys(directory):
    return sorted({k.split("/")[1] for k, _ in tf.train.list_variables(str(directory)) if k.startswith("model/")})


# -- (a) a plain tower function over layers from its closure ---------------------------------------
def train_plain(tower_fn, variables, session_init=None):
    """The script's training: SimpleTrainer over the tower function, a checkpoint per epoch."""
    trainer = SimpleTrainer()
    trainer.setup_graph(SIGNATURE, FeedInput(data()), tower_fn, lambda: keras.optimizers.Adam(0.05))
    probe = StartProbe(lambda: variables() + [trainer.optimizer.iterations])
    trainer.train_with_defaults(callbacks=[ModelSaver(), probe], monitors=[], extra_callbacks=[],
                                steps_per_epoch=STEPS, max_epoch=1 if session_init is None else 2,
                                session_init=session_init)
    return trainer, probe


def script_v1(declare, session_init=None):
    body, head = keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)

    def get_cost(x, y):
        return tf.reduce_mean(tf.square(head(body(x))[:, 0] - y), name="cost")

    tower_fn = TowerFunc(get_cost, SIGNATURE, owner={"body": body, "head": head}) if declare else get_cost
    trainer, probe = train_plain(tower_fn, lambda: body.weights + head.weights, session_init)
    return trainer, probe, body.weights + head.weights


def script_v2(declare, session_init=None):
    """The same script after its author renamed ``body`` to ``encoder``."""
    encoder, head = keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)

    def get_cost(x, y):
        return tf.reduce_mean(tf.square(head(encoder(x))[:, 0] - y), name="cost")

    tower_fn = TowerFunc(get_cost, SIGNATURE, owner={"body": encoder, "head": head}) if declare else get_cost
    trainer, probe = train_plain(tower_fn, lambda: encoder.weights + head.weights, session_init)
    return trainer, probe, encoder.weights + head.weights


def test_plain_tower_function_with_a_declared_owner_keeps_its_keys_across_a_rename(logger_dir):
    _, _, weights = script_v1(declare=True)
    saved = values(weights)
    assert model_keys(logger_dir) == ["body", "head"]

    _, probe, _ = script_v2(declare=True, session_init=resume_init())
    for restored, expected in zip(probe.start_values, saved):
        np.testing.assert_array_equal(restored, expected)
    assert probe.start_values[-1] == STEPS  # the optimizer's state came back too
    assert model_keys(logger_dir) == ["body", "head"]


def test_plain_tower_function_renamed_without_a_declared_owner_cannot_resume(logger_dir):
    script_v1(declare=False)
    latest = tf.train.latest_checkpoint(logger_dir)
    assert model_keys(logger_dir) == ["body", "head"]  # the fallback: the closure's names

    with pytest.raises(ResumeError) as info:
        script_v2(declare=False, session_init=resume_init())
    message = str(info.value)
    assert latest in message  # the checkpoint
    for key in ("model/encoder/_kernel", "model/encoder/bias"):  # the variables it lacks
        assert key in message
    assert "model/body/_kernel" in message  # what it holds instead
    assert "nothing was restored" in message and "TowerFunc(fn, inputs, owner=...)" in message
    assert tf.train.latest_checkpoint(logger_dir) == latest  # nothing trained, nothing written


# -- (b) a custom trainer's optimizers ----------------------------------------------------------------
class Regressor(ModelDesc):
    def __init__(self):
        self.body = keras.layers.Dense(4, activation="tanh")
        self.head = keras.layers.Dense(1)

    def inputs(self):
        return SIGNATURE

    def build_graph(self, x, y):
        return tf.reduce_mean(tf.square(self.head(self.body(x))[:, 0] - y), name="cost")

    def optimizer(self):
        return keras.optimizers.SGD(0.05)


class TwoOptimizerTrainer(TowerTrainer):
    """Trains the body and the head with their own optimizers (a GAN's pattern)."""

    def __init__(self, model, input, declare):
        super().__init__()
        self.setup_input(model.get_input_signature(), input)
        self.model = model
        self.tower_func = TowerFunc(model.build_graph, model.get_input_signature())
        self.create_optimizers(declare)

        def build(feeds):
            with self.input.tracing(feeds):
                inputs = self.input.get_input_tensors(0)
            with TowerContext("tower0", is_training=True):
                return self.tower_func(*inputs)

        tf.function(build, input_signature=[input.feed_signature()]).get_concrete_function()
        for opt, layer in self.updates():
            opt.build(layer.trainable_variables)
        self.train_op = TracedStep(self._step, input.feed_signature())
        self.train_op.trace()

    def create_optimizers(self, declare):
        self.body_opt = keras.optimizers.Adam(0.05)
        self.head_opt = keras.optimizers.SGD(0.05, momentum=0.9)
        if declare:
            self.declare_checkpoint_objects(body_optimizer=self.body_opt, head_optimizer=self.head_opt)

    def updates(self):
        return [(self.body_opt, self.model.body), (self.head_opt, self.model.head)]

    def _step(self, feeds, fetch_names):
        with self.input.tracing(feeds):
            inputs = self.input.get_input_tensors(0)
        with TowerContext("tower0", is_training=True), tf.GradientTape(persistent=True) as tape:
            cost = self.tower_func(*inputs)
        for opt, layer in self.updates():
            opt.apply_gradients(zip(tape.gradient(cost, layer.trainable_variables), layer.trainable_variables))
        return cost, {}


class RenamedTwoOptimizerTrainer(TwoOptimizerTrainer):
    """The same trainer after its author renamed ``body_opt`` to ``encoder_opt``."""

    def create_optimizers(self, declare):
        self.encoder_opt = keras.optimizers.Adam(0.05)
        self.head_opt = keras.optimizers.SGD(0.05, momentum=0.9)
        if declare:
            self.declare_checkpoint_objects(body_optimizer=self.encoder_opt, head_optimizer=self.head_opt)

    def updates(self):
        return [(self.encoder_opt, self.model.body), (self.head_opt, self.model.head)]


def train_custom(trainer_class, declare, session_init=None):
    trainer = trainer_class(Regressor(), FeedInput(data()), declare)
    probe = StartProbe(lambda: trainer.updates()[0][0].variables)
    trainer.train_with_defaults(callbacks=[ModelSaver(), probe], monitors=[], extra_callbacks=[],
                                steps_per_epoch=STEPS, max_epoch=1 if session_init is None else 2,
                                session_init=session_init)
    return trainer, probe


def test_custom_trainer_with_declared_optimizers_keeps_their_keys_across_a_rename(logger_dir):
    first, _ = train_custom(TwoOptimizerTrainer, declare=True)
    saved = values(first.body_opt.variables)
    keys = {k.split("/")[0] for k, _ in tf.train.list_variables(logger_dir)}
    assert {"body_optimizer", "head_optimizer"} <= keys and not keys & {"body_opt", "head_opt"}

    trainer, probe = train_custom(RenamedTwoOptimizerTrainer, declare=True,
                                  session_init=resume_init())
    assert len(probe.start_values) == len(saved)
    for restored, expected in zip(probe.start_values, saved):  # Adam's iterations, moments, ...
        np.testing.assert_array_equal(restored, expected)
    assert int(trainer.encoder_opt.iterations.numpy()) == 3 * STEPS  # 1 epoch saved, 2 more now


def test_custom_trainer_renamed_optimizer_without_declaration_cannot_resume(logger_dir):
    train_custom(TwoOptimizerTrainer, declare=False)
    latest = tf.train.latest_checkpoint(logger_dir)
    with pytest.raises(ResumeError) as info:
        train_custom(RenamedTwoOptimizerTrainer, declare=False,
                     session_init=resume_init())
    message = str(info.value)
    assert latest in message
    assert "encoder_opt/_iterations" in message  # the renamed optimizer's variables
    assert "body_opt/_iterations" in message  # what the checkpoint holds for it
    assert "declare_checkpoint_objects" in message
    assert tf.train.latest_checkpoint(logger_dir) == latest


# -- (c) AutoResumeTrainConfig: a checkpoint lacking a variable ----------------------------------------
class Classifier(ModelDesc):
    def __init__(self):
        self.fc = keras.layers.Dense(2)

    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]

    def head(self, logits):
        return logits

    def build_graph(self, x, label):
        logits = self.head(self.fc(x))
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits),
                              name="cost")

    def optimizer(self):
        return keras.optimizers.SGD(0.1)


class DeeperClassifier(Classifier):
    """The next version of the model (or one built on Classifier's weights): a layer after ``fc``."""

    def __init__(self):
        super().__init__()
        self.out = keras.layers.Dense(2)

    def head(self, logits):
        return self.out(tf.nn.relu(logits))


def classification_data(n=STEPS, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(8, 3)).astype(np.float32), rng.integers(0, 2, size=8).astype(np.int32))
            for _ in range(n)]


def launch(config_class, model, max_epoch, checkpoint_dir=None, **kwargs):
    probe = StartProbe(lambda: model.fc.weights)
    config = config_class(model=model, dataflow=classification_data(),
                          callbacks=[ModelSaver(checkpoint_dir=checkpoint_dir), probe],
                          extra_callbacks=[], monitors=[], steps_per_epoch=STEPS, max_epoch=max_epoch, **kwargs)
    launch_train_with_config(config, SimpleTrainer())
    return probe


def test_autoresume_from_a_checkpoint_lacking_a_variable_raises_naming_it(logger_dir):
    launch(AutoResumeTrainConfig, Classifier(), max_epoch=1)
    latest = tf.train.latest_checkpoint(logger_dir)

    model = DeeperClassifier()
    with pytest.raises(ResumeError) as info:
        launch(AutoResumeTrainConfig, model, max_epoch=2)
    message = str(info.value)
    assert latest in message
    assert "model/out/_kernel" in message and "model/out/bias" in message
    assert "model/fc" not in message  # fc is in the checkpoint
    assert tf.train.latest_checkpoint(logger_dir) == latest  # nothing trained, nothing written
    saved_kernel = tf.train.load_variable(latest, "model/fc/_kernel/.ATTRIBUTES/VARIABLE_VALUE")
    assert not np.array_equal(model.fc.kernel.numpy(), saved_kernel)  # nothing was restored


# -- (d) a foreign (pretrained) checkpoint: a warning with the list ----------------------------------
def test_smartinit_of_a_foreign_checkpoint_missing_variables_warns_with_the_list(tmp_path, logger_dir, caplog):
    foreign = tmp_path / "pretrained"  # another run's checkpoints, not this run's logger dir
    first = Classifier()
    launch(TrainConfig, first, max_epoch=1, checkpoint_dir=str(foreign))
    trained = values(first.fc.weights)

    model = DeeperClassifier()
    with caplog.at_level(logging.WARNING, logger="trainstack.towers"):
        probe = launch(TrainConfig, model, max_epoch=1, session_init=SmartInit(str(foreign)))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
                and "no value for" in r.getMessage()]
    assert len(warnings) == 1
    assert "model/out/_kernel" in warnings[0] and "model/out/bias" in warnings[0]
    assert str(foreign) in warnings[0]
    assert "keep the values they have" in warnings[0] and "train from there" in warnings[0]
    for restored, expected in zip(probe.start_values, trained):  # what it has is loaded
        np.testing.assert_array_equal(restored, expected)


# -- (e) the fallback logs its keys once --------------------------------------------------------------
def test_reflection_fallback_logs_its_keys_once(logger_dir, caplog):
    with caplog.at_level(logging.INFO, logger="trainstack.towers"):
        trainer, _, _ = script_v1(declare=False)
        assert trainer.checkpoint_objects["model"] is trainer.tower_func.checkpoint_module  # read again
        trainer.get_predictor(["x", "y"], ["cost"])(*data(1)[0])
    lines = [r.getMessage() for r in caplog.records if "declares no owner" in r.getMessage()]
    assert len(lines) == 1, lines
    assert "model/body" in lines[0] and "model/head" in lines[0]
    assert "owner={'body': body, 'head': head}" in lines[0]  # how to declare them

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="trainstack.towers"):
        custom, _ = train_custom(TwoOptimizerTrainer, declare=False)
        assert set(custom.optimizers) == {"body_opt", "head_opt"} <= set(custom.checkpoint_objects)
    lines = [r.getMessage() for r in caplog.records if "declares no checkpoint keys" in r.getMessage()]
    assert len(lines) == 1, lines
    assert "body_opt (self.body_opt)" in lines[0] and "head_opt (self.head_opt)" in lines[0]
    assert "self.declare_checkpoint_objects(body_opt=self.body_opt, head_opt=self.head_opt)" in lines[0]

    # declared owners log nothing of the kind
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="trainstack.towers"):
        script_v1(declare=True)
        train_custom(TwoOptimizerTrainer, declare=True)
    assert not [r for r in caplog.records if "declares no" in r.getMessage()]


class Net:
    """A tower function's owner that is neither a ModelDesc nor declares ``checkpoint_objects()``."""

    def __init__(self):
        self.body, self.head = keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)

    def cost(self, x, y):
        return tf.reduce_mean(tf.square(self.head(self.body(x))[:, 0] - y), name="cost")


class DeclaringNet(Net):
    def checkpoint_objects(self):
        return {"encoder": self.body, "decoder": self.head}


def test_a_method_of_an_owner_declaring_nothing_warns_naming_the_attributes_found(logger_dir, caplog):
    net = Net()
    with caplog.at_level(logging.INFO, logger="trainstack.towers"):
        train_plain(TowerFunc(net.cost, SIGNATURE), lambda: net.body.weights)
    lines = [r.getMessage() for r in caplog.records if "declares no checkpoint_objects()" in r.getMessage()]
    assert len(lines) == 1, lines
    assert "is a method of Net" in lines[0] and "model/body" in lines[0] and "model/head" in lines[0]
    assert "def checkpoint_objects(self): return {'body': self.body, 'head': self.head}" in lines[0]
    assert model_keys(logger_dir) == ["body", "head"]


def test_an_owner_declaring_its_objects_keys_them_so_and_warns_nothing(logger_dir, caplog):
    net = DeclaringNet()
    with caplog.at_level(logging.INFO, logger="trainstack.towers"):
        train_plain(TowerFunc(net.cost, SIGNATURE), lambda: net.body.weights)
    assert not [r for r in caplog.records if "declares no" in r.getMessage()]
    assert model_keys(logger_dir) == ["decoder", "encoder"]


def test_a_model_desc_is_keyed_by_its_attributes_without_a_warning(logger_dir, caplog):
    """The default path (a ModelDesc whose Keras layers are attributes, built in build_graph): its
    attributes are its declaration (TensorFlow's rule for objects), so nothing is logged as guessed."""
    with caplog.at_level(logging.INFO, logger="trainstack.towers"):
        launch(TrainConfig, Classifier(), max_epoch=1)
    assert not [r for r in caplog.records if "declares no" in r.getMessage()
                or "were taken from" in r.getMessage()]
    assert model_keys(logger_dir) == ["fc"]


def test_declarations_are_checked():
    with pytest.raises(TypeError, match="owner="):
        TowerFunc(lambda x, y: x, SIGNATURE, owner="body")
    with pytest.raises(TypeError, match=r"checkpoint_objects\(\)\['lr'\] is float"):
        TowerFunc(lambda x, y: x, SIGNATURE, owner={"lr": 0.1})
    trainer = SimpleTrainer()
    with pytest.raises(ValueError, match="'model' is reserved"):
        trainer.declare_checkpoint_objects(model=tf.Variable(1.0))
    with pytest.raises(ValueError, match="'loop_state' is reserved"):
        trainer.declare_checkpoint_objects(loop_state=tf.Variable(1.0))
    with pytest.raises(TypeError, match="cannot hold"):
        trainer.declare_checkpoint_objects(lr=0.1)


def test_a_model_desc_declares_its_keys_with_checkpoint_objects(logger_dir):
    class Renamed(Classifier):
        """``fc`` renamed ``classifier``; the checkpoint keys stay those of the older version."""

        def __init__(self):
            self.classifier = keras.layers.Dense(2)

        @property
        def fc(self):  # what launch()'s probe reads
            return self.classifier

        def checkpoint_objects(self):
            return {"fc": self.classifier}

    first = Classifier()
    launch(AutoResumeTrainConfig, first, max_epoch=1)
    saved = values(first.fc.weights)
    probe = launch(AutoResumeTrainConfig, Renamed(), max_epoch=2)
    assert probe.start_step == STEPS
    for restored, expected in zip(probe.start_values, saved):
        np.testing.assert_array_equal(restored, expected)
    assert model_keys(logger_dir) == ["fc"]


def resume_init():
    """The run's own latest checkpoint, restored as a resume (tensorpack's ``get_sessinit_resume()``)."""
    return CheckpointInit(AutoResumeTrainConfig.find_checkpoint(), resume=True)
