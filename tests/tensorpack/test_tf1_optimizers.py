"""TF1 optimizers (issue 23, point 3): ``tfv1.train.AdamOptimizer(lr)`` & co. in a ported script.

tensorpack's examples return ``tf.train.AdamOptimizer``, ``MomentumOptimizer``,
``GradientDescentOptimizer`` or ``RMSPropOptimizer`` from ``optimizer()`` (``from tensorpack
import tfv1 as tf``), and their custom trainers call ``opt.minimize(loss, var_list=...,
name=...)``. Written like such a script, these tests check that the weights follow TF1's
rule (TF1's defaults: Adam's epsilon 1e-8, RMSProp's accumulator starting at one, TF1's
momentum formula with and without nesterov) step by step against the formula in NumPy,
that the optimizer's state is checkpointed so that a resumed run continues exactly like an
uninterrupted one, that a learning-rate setter changes the rate TF1's rule applies, and
that a GAN-style custom trainer trains with one.
"""
from __future__ import annotations

import threading

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import ModelSaver, ScheduledHyperParamSetter, add_moving_summary
from trainstack.loop import Callback
from trainstack.tensorpack.input_source import FeedInput, QueueInput
from trainstack.tensorpack.tf1 import (
    ModelDesc,
    ModelDescBase,
    SimpleTrainer,
    TF1CallError,
    TowerContext,
    TowerFunc,
    TowerTrainer,
    apply_grad_processors,
    get_global_step_var,
    tfv1,
)
from trainstack.towers import (
    AutoResumeTrainConfig,
    GlobalNormClip,
    SmartInit,
    TrainConfig,
    launch_train_with_config,
)

W0 = np.array([[0.5], [-0.3], [0.2]], np.float32)
RTOL, ATOL = 2e-5, 1e-6  # float32 training against the float64 formula


def make_data(n=5, batch=8, seed=0):
    rng = np.random.default_rng(seed)
    data = []
    for _ in range(n):
        x = rng.normal(size=(batch, 3)).astype(np.float32)
        y = (x @ np.array([1.0, 2.0, -1.0]) + 0.5 + 0.1 * rng.normal(size=batch)).astype(np.float32)
        data.append((x, y))
    return data


DATA = make_data()


# -- the ported script's model ----------------------------------------------------------------------
class Regression(ModelDesc):
    """``cost = scale * mean((x @ W + b - y)^2)``, W starting at W0, b at 0."""

    def __init__(self, make_optimizer, cost_scale=1.0):
        self.fc = keras.layers.Dense(1, kernel_initializer=lambda shape, dtype=None: tf.constant(W0, dtype),
                                     name="fc")
        self.make_optimizer, self.cost_scale = make_optimizer, cost_scale

    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, x, y):
        residual = self.fc(x)[:, 0] - y
        self.cost = tf.multiply(self.cost_scale, tf.reduce_mean(residual * residual), name="cost")
        return self.cost

    def optimizer(self):
        return self.make_optimizer()


class Record(Callback):
    """The weights after each step, and the learning rate the step ran with."""

    def __init__(self, model):
        self.model, self.weights, self.lrs = model, [], []

    def _trigger_step(self):
        self.weights.append([self.model.fc.kernel.numpy().copy(), self.model.fc.bias.numpy().copy()])
        optimizer = next(iter(self.trainer.optimizers.values()))  # a custom trainer's too
        self.lrs.append(float(np.asarray(optimizer.learning_rate)))


def train(model, max_epoch=2, callbacks=(), config=TrainConfig):
    trainer = SimpleTrainer()
    launch_train_with_config(config(model=model, dataflow=DATA, max_epoch=max_epoch, callbacks=list(callbacks),
                                    monitors=[]), trainer)
    return trainer


# -- TF1's rules in NumPy (float64) ------------------------------------------------------------------
def gradients(params, x, y, scale=1.0):
    w, b = params
    residual = x.astype(np.float64) @ w[:, 0] + b[0] - y
    return [scale * 2.0 / len(y) * x.T.astype(np.float64) @ residual[:, None],
            np.array([scale * 2.0 / len(y) * residual.sum()])]


class TF1Rule:
    """``kind``'s TF1 update, per parameter array with its own slots (TF1's initial values)."""

    def __init__(self, kind, **hp):
        self.kind, self.hp, self.slots, self.t = kind, hp, {}, 0

    def __call__(self, params, grads, lr):
        self.t += 1
        return [self._update(i, w, g, lr) for i, (w, g) in enumerate(zip(params, grads))]

    def _update(self, i, w, g, lr):
        hp, s = self.hp, self.slots.setdefault(i, {"m": 0 * w, "v": 0 * w, "ms": 0 * w + 1, "mg": 0 * w,
                                                    "mom": 0 * w})
        if self.kind == "sgd":
            return w - lr * g
        if self.kind == "momentum":  # accum = momentum*accum + g; var -= lr*accum (nesterov: see TF1)
            s["m"] = hp["momentum"] * s["m"] + g
            if hp.get("use_nesterov"):
                return w - lr * g - lr * hp["momentum"] * s["m"]
            return w - lr * s["m"]
        if self.kind == "keras_sgd":  # Keras' SGD momentum: v = momentum*v - lr*g; var += v
            s["mom"] = hp["momentum"] * s["mom"] - lr * g
            return w + s["mom"]
        if self.kind == "adam":
            b1, b2 = hp.get("beta1", 0.9), hp.get("beta2", 0.999)
            s["m"] = b1 * s["m"] + (1 - b1) * g
            s["v"] = b2 * s["v"] + (1 - b2) * g * g
            alpha = lr * np.sqrt(1 - b2 ** self.t) / (1 - b1 ** self.t)
            return w - alpha * s["m"] / (np.sqrt(s["v"]) + hp.get("epsilon", 1e-8))
        if self.kind == "rmsprop":
            rho, mu, eps = hp.get("decay", 0.9), hp.get("momentum", 0.0), hp.get("epsilon", 1e-10)
            s["ms"] = rho * s["ms"] + (1 - rho) * g * g
            denominator = s["ms"] + eps
            if hp.get("centered"):
                s["mg"] = rho * s["mg"] + (1 - rho) * g
                denominator = s["ms"] - s["mg"] ** 2 + eps
            s["mom"] = mu * s["mom"] + lr * g / np.sqrt(denominator)
            return w - s["mom"]
        raise ValueError(self.kind)


def expected_steps(rule, lrs, scale=1.0):
    """The weights after each step of ``rule`` with learning rates ``lrs`` over DATA's passes."""
    params, steps = [W0.astype(np.float64), np.zeros(1)], []
    for k, lr in enumerate(lrs):
        x, y = DATA[k % len(DATA)]
        params = rule(params, gradients(params, x, y, scale), lr)
        steps.append(params)
    return steps


def assert_steps(recorded, expected):
    assert len(recorded) == len(expected)
    for k, (got, want) in enumerate(zip(recorded, expected)):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"step {k + 1}")


# -- per optimizer: the weights follow TF1's rule step by step ----------------------------------------
CASES = {
    "adam": (lambda: tfv1.train.AdamOptimizer(0.05), TF1Rule("adam"), 0.05),
    "adam-beta": (lambda: tfv1.train.AdamOptimizer(0.05, beta1=0.5, beta2=0.9),
                  TF1Rule("adam", beta1=0.5, beta2=0.9), 0.05),
    "momentum": (lambda: tfv1.train.MomentumOptimizer(0.05, 0.9), TF1Rule("momentum", momentum=0.9), 0.05),
    "nesterov": (lambda: tfv1.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
                 TF1Rule("momentum", momentum=0.9, use_nesterov=True), 0.05),
    "gradient-descent": (lambda: tfv1.train.GradientDescentOptimizer(0.05), TF1Rule("sgd"), 0.05),
    "rmsprop": (lambda: tfv1.train.RMSPropOptimizer(0.01), TF1Rule("rmsprop"), 0.01),
    "rmsprop-centered": (lambda: tfv1.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5, epsilon=1e-6,
                                                             centered=True),
                         TF1Rule("rmsprop", decay=0.8, momentum=0.5, epsilon=1e-6, centered=True), 0.01),
}


@pytest.mark.parametrize("case", list(CASES))
def test_weights_follow_tf1s_rule_step_by_step(case):
    make, rule, lr = CASES[case]
    model = Regression(make)
    record = Record(model)
    trainer = train(model, callbacks=[record])
    assert trainer.global_step == 2 * len(DATA)
    assert isinstance(trainer.optimizer, keras.optimizers.Optimizer)  # what setters and savers see
    assert_steps(record.weights, expected_steps(rule, [lr] * trainer.global_step))


def test_adam_defaults_are_tf1s_epsilon_1e8_not_keras_1e7():
    # gradients of about 1e-7: there epsilon is not negligible, and TF1's 1e-8 shows
    model = Regression(lambda: tfv1.train.AdamOptimizer(), cost_scale=1e-7)
    record = Record(model)
    train(model, callbacks=[record])
    lrs = [0.001] * len(record.weights)
    assert_steps(record.weights, expected_steps(TF1Rule("adam"), lrs, scale=1e-7))
    keras_epsilon = expected_steps(TF1Rule("adam", epsilon=1e-7), lrs, scale=1e-7)
    assert not np.allclose(record.weights[-1][0], keras_epsilon[-1][0], rtol=1e-3, atol=0)


def test_stand_ins_give_tensorflows_own_tf1_results_to_the_bit():
    """The same gradients, dense and sparse (an embedding's), given in traced steps to TF1's own
    optimizer and to what the trainers use: the same float32 weights."""
    makers = [lambda: tfv1.train.AdamOptimizer(0.1), lambda: tfv1.train.MomentumOptimizer(0.1, 0.9),
              lambda: tfv1.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
              lambda: tfv1.train.GradientDescentOptimizer(0.1),
              lambda: tfv1.train.RMSPropOptimizer(0.1, momentum=0.5),
              lambda: tfv1.train.RMSPropOptimizer(0.1, momentum=0.5, centered=True)]
    rng = np.random.default_rng(1)
    for make, width in [(make, width) for make in makers for width in (1, 2, 17)]:
        dense0, table0 = rng.normal(size=(5,)).astype(np.float32), rng.normal(size=(4, width)).astype(np.float32)
        stand_in = apply_grad_processors(make(), []).optimizer  # the Keras optimizer trainers use
        own = make()
        dense, table, dense1, table1 = (tf.Variable(v) for v in (dense0, table0, dense0, table0))

        def grads(d, t):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.sin(d) * d) + tf.reduce_sum(tf.gather(t, [0, 2, 0]) ** 2)
            return tape.gradient(loss, [d, t])

        @tf.function(autograph=False)
        def step():
            stand_in.apply_gradients(zip(grads(dense, table), [dense, table]))

        @tf.function(autograph=False)
        def own_step():  # TF1 ran its optimizers in graphs (grappler's rewrites round alike)
            own.apply_gradients(zip(grads(dense1, table1), [dense1, table1]))

        for _ in range(4):
            step()
            own_step()
        assert isinstance(grads(dense1, table1)[1], tf.IndexedSlices)
        np.testing.assert_array_equal(dense.numpy(), dense1.numpy(), err_msg=repr(stand_in))
        np.testing.assert_array_equal(table.numpy(), table1.numpy(), err_msg=repr(stand_in))


def test_sparse_rmsprop_off_the_cpu_follows_tf1s_sparse_kernel(monkeypatch):
    """TF1's sparse RMSProp kernels exist on the CPU only: a variable elsewhere (a GPU's) gets
    the kernels' expressions in plain ops (here forced on the CPU), equal up to float32 rounding."""
    from trainstack.tensorpack.tf1 import train_optimizers

    monkeypatch.setattr(train_optimizers, "_on_cpu", lambda var: False)
    rng = np.random.default_rng(2)
    for centered in (False, True):
        table0 = rng.normal(size=(6, 9)).astype(np.float32)
        table, table1 = tf.Variable(table0), tf.Variable(table0)
        stand_in = apply_grad_processors(tfv1.train.RMSPropOptimizer(0.1, momentum=0.5, centered=centered),
                                         []).optimizer
        own = tfv1.train.RMSPropOptimizer(0.1, momentum=0.5, centered=centered)

        def grad(t):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.sin(tf.gather(t, [0, 2, 0, 5])))
            return tape.gradient(loss, t)

        @tf.function(autograph=False)
        def step():
            stand_in.apply_gradients([(grad(table), table)])

        for _ in range(5):
            step()
            own.apply_gradients([(grad(table1), table1)])
        np.testing.assert_allclose(table.numpy(), table1.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(table.numpy()[[1, 3, 4]], table0[[1, 3, 4]])  # rows without gradient


# -- the learning rate: a setter changes what TF1's rule applies -------------------------------------
def learning_rate_variable():
    # tensorpack's idiom in optimizer(): a non-trainable variable the setters find by name
    return tfv1.get_variable("learning_rate", initializer=0.05, trainable=False)


@pytest.mark.parametrize("lr_form", ["number", "variable"])
def test_scheduled_hyperparam_setter_changes_the_rate_tf1_momentum_applies(lr_form):
    lr_var = []

    def make():
        lr = 0.05 if lr_form == "number" else learning_rate_variable()
        lr_var.append(lr)
        return tfv1.train.MomentumOptimizer(lr, 0.9)

    model = Regression(make)
    record = Record(model)
    trainer = train(model, callbacks=[ScheduledHyperParamSetter("learning_rate", [(0, 0.05), (1, 0.01)]),
                                      record])
    lrs = [0.05] * len(DATA) + [0.01] * len(DATA)
    np.testing.assert_allclose(record.lrs, lrs, rtol=1e-6)
    # TF1's momentum: the new rate scales the whole accumulated velocity from the next step on
    assert_steps(record.weights, expected_steps(TF1Rule("momentum", momentum=0.9), lrs))
    keras_rule = expected_steps(TF1Rule("keras_sgd", momentum=0.9), lrs)
    assert not np.allclose(record.weights[-1][0], keras_rule[-1][0], rtol=1e-3, atol=0)
    if lr_form == "variable":  # the setter set the script's own variable
        assert trainer.optimizer.learning_rate is lr_var[0]
        assert float(lr_var[0].numpy()) == pytest.approx(0.01)


def test_a_tf1_schedule_on_the_step_counter_drives_a_tf1_optimizer():
    # tensorpack's exponential_decay(..., get_global_step_var(), ...) given to the TF1 optimizer
    model = Regression(lambda: tfv1.train.MomentumOptimizer(
        tfv1.train.exponential_decay(0.1, get_global_step_var(), 3, 0.5, staircase=True), 0.9))
    record = Record(model)
    train(model, callbacks=[record])
    lrs = [0.1 * 0.5 ** (s // 3) for s in range(2 * len(DATA))]  # step s runs with global_step == s
    assert_steps(record.weights, expected_steps(TF1Rule("momentum", momentum=0.9), lrs))


# -- exact resume: the optimizer's state is checkpointed ---------------------------------------------
RESUME_CASES = {
    "adam": (lambda: tfv1.train.AdamOptimizer(0.05), []),
    "rmsprop-centered": (lambda: tfv1.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True), []),
    "momentum-scheduled": (lambda: tfv1.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
                           [(0, 0.05), (3, 0.01)]),
}


@pytest.mark.parametrize("case", list(RESUME_CASES))
def test_resumed_run_continues_exactly_like_an_uninterrupted_one(case, logger_dir):
    make, schedule = RESUME_CASES[case]

    def callbacks():
        return [ScheduledHyperParamSetter("learning_rate", schedule)] if schedule else []

    whole = Regression(make)
    whole_trainer = train(whole, max_epoch=4, callbacks=callbacks())

    first = Regression(make)  # epochs 1-2, a checkpoint after each (in the logger directory)
    train(first, max_epoch=2, callbacks=[ModelSaver(), *callbacks()], config=AutoResumeTrainConfig)
    second = Regression(make)  # a new process: resumes from the checkpoint of epoch 2
    record = Record(second)
    trainer = train(second, max_epoch=4, callbacks=[ModelSaver(), *callbacks(), record],
                    config=AutoResumeTrainConfig)

    assert len(record.weights) == 2 * len(DATA)  # epochs 3 and 4 only
    assert trainer.global_step == whole_trainer.global_step == 4 * len(DATA)
    np.testing.assert_array_equal(second.fc.kernel.numpy(), whole.fc.kernel.numpy())
    np.testing.assert_array_equal(second.fc.bias.numpy(), whole.fc.bias.numpy())
    ours, theirs = trainer.optimizer.variables, whole_trainer.optimizer.variables
    assert len(ours) == len(theirs) > 3  # iterations, learning rate, the slots (Adam: beta powers)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)


# -- custom trainers: opt.minimize(...) in __init__, as tensorpack's -----------------------------------
class RegressionTrainer(TowerTrainer):
    """tensorpack's form of a custom trainer (only the imports changed)."""

    def __init__(self, input, model):
        super().__init__()
        self.register_callback(input.setup(model.get_input_signature()))
        self.tower_func = TowerFunc(model.build_graph, model.inputs())
        with TowerContext('', is_training=True):
            self.tower_func(*input.get_input_tensors())
        opt = model.get_optimizer()
        with tf.name_scope('optimize'):
            self.train_op = opt.minimize(model.cost, var_list=model.fc.trainable_variables, name='train_op')


TF1_MINIMIZE = tfv1.train.Optimizer.__dict__["minimize"]


def test_custom_trainer_minimize_of_a_tf1_optimizer_follows_tf1s_rule():
    model = Regression(lambda: tfv1.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True))
    trainer = RegressionTrainer(FeedInput(DATA), model)
    assert tfv1.train.Optimizer.__dict__["minimize"] is TF1_MINIMIZE  # TensorFlow's own again
    record = Record(model)
    trainer.train_with_defaults(callbacks=[record], monitors=[], max_epoch=2)
    assert trainer.checkpoint_objects["optimizer"] is trainer.optimizers["optimizer"]
    assert_steps(record.weights, expected_steps(TF1Rule("momentum", momentum=0.9, use_nesterov=True),
                                                [0.05] * 2 * len(DATA)))


def test_tf1_minimize_outside_a_trainers_init_is_tensorflows_own():
    var = tf.Variable([1.0, -2.0])
    opt = tfv1.train.GradientDescentOptimizer(0.5)
    opt.minimize(lambda: tf.reduce_sum(var * var), var_list=[var])  # TF1's eager minimize
    np.testing.assert_allclose(var.numpy(), [0.0, 0.0])
    assert tfv1.train.Optimizer.__dict__["minimize"] is TF1_MINIMIZE


def test_tf1_minimize_with_global_step_names_the_fix():
    class StepCountingTrainer(TowerTrainer):
        def __init__(self, input, model):
            super().__init__()
            self.register_callback(input.setup(model.get_input_signature()))
            self.tower_func = TowerFunc(model.build_graph, model.inputs())
            with TowerContext('', is_training=True):
                self.tower_func(*input.get_input_tensors())
            self.train_op = model.get_optimizer().minimize(model.cost, global_step=tf.Variable(0))

    with pytest.raises(TF1CallError, match="global_step=.*loop counts the steps.*remove global_step="):
        StepCountingTrainer(FeedInput(DATA), Regression(lambda: tfv1.train.AdamOptimizer()))
    assert tfv1.train.Optimizer.__dict__["minimize"] is TF1_MINIMIZE


# -- the GAN trainer of tensorpack's examples, with a TF1 optimizer ----------------------------------------
BATCH, NOISE = 16, 4


class GANModel(ModelDescBase):
    def __init__(self):
        self.gen = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)])
        self.discrim = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
        self._opt = None

    def inputs(self):
        return [tf.TensorSpec((None, 2), tf.float32, 'real')]

    def build_graph(self, real):
        z = tf.random.uniform([BATCH, NOISE], -1, 1, name='z_train')
        logits_real, logits_fake = self.discrim(real), self.discrim(self.gen(z))
        self.d_loss = tf.add(
            .5 * tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
                logits=logits_real, labels=tf.ones_like(logits_real))),
            .5 * tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
                logits=logits_fake, labels=tf.zeros_like(logits_fake))), name='d_loss')
        self.g_loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
            logits=logits_fake, labels=tf.ones_like(logits_fake)), name='g_loss')
        add_moving_summary(self.g_loss, self.d_loss)
        self.g_vars, self.d_vars = self.gen.trainable_variables, self.discrim.trainable_variables

    def get_optimizer(self):
        if self._opt is None:
            self._opt = tfv1.train.AdamOptimizer(1e-2, beta1=0.5)
        return self._opt


class GANTrainer(TowerTrainer):
    def __init__(self, input, model):
        super().__init__()
        self.register_callback(input.setup(model.get_input_signature()))
        self.tower_func = TowerFunc(model.build_graph, model.inputs())
        with TowerContext('', is_training=True):
            self.tower_func(*input.get_input_tensors())
        opt = model.get_optimizer()
        with tf.name_scope('optimize'):
            g_min = opt.minimize(model.g_loss, var_list=model.g_vars, name='g_op')
            with tf.control_dependencies([g_min]):
                d_min = opt.minimize(model.d_loss, var_list=model.d_vars, name='d_op')
        self.train_op = d_min


def ring_data(n=10, seed=0):
    rng = np.random.default_rng(seed)
    return [[(rng.normal(size=(BATCH, 2)) * 0.1 + [1.0, -1.0]).astype(np.float32)] for _ in range(n)]


def in_thread(fn, timeout=120):
    """Run ``fn`` in a thread; fail instead of hanging when a queue blocks."""
    result, error = [], []

    def target():
        try:
            result.append(fn())
        except BaseException as e:  # noqa: BLE001
            error.append(e)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"{fn} did not finish in {timeout} s"
    if error:
        raise error[0]
    return result[0]


def test_gan_trainer_trains_with_a_tf1_adam_and_checkpoints_its_state(tmp_path):
    model = GANModel()
    trainer = in_thread(lambda: GANTrainer(QueueInput(ring_data()), model))
    g0, d0 = [v.numpy() for v in model.g_vars], [v.numpy() for v in model.d_vars]
    opt = trainer.checkpoint_objects["optimizer"]
    assert isinstance(opt, keras.optimizers.Optimizer)  # the Keras optimizer standing for the TF1 Adam
    in_thread(lambda: trainer.train_with_defaults(
        callbacks=[ModelSaver(checkpoint_dir=str(tmp_path))], monitors=[], max_epoch=2))
    assert int(opt.iterations.numpy()) == 40  # one shared optimizer: g_op then d_op at each of 20 steps
    # TF1's beta1_power, beta2_power: multiplied at each of the 40 applies, as TF1's were
    assert float(opt.beta1_power.numpy()) == pytest.approx(0.5 ** 41, rel=1e-4)
    assert all(not np.allclose(a, v.numpy()) for a, v in zip(g0 + d0, model.g_vars + model.d_vars))

    model2 = GANModel()  # a new run restoring the checkpoint: the TF1 Adam's whole state comes back
    trainer2 = in_thread(lambda: GANTrainer(QueueInput(ring_data()), model2))
    opt2 = trainer2.checkpoint_objects["optimizer"]
    assert int(opt2.iterations.numpy()) == 0
    SmartInit(str(tmp_path)).init(trainer2)
    assert len(opt2.variables) == len(opt.variables) == 2 * len(model.g_vars + model.d_vars) + 4
    for a, b in zip(opt.variables, opt2.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)


# -- where else a TF1 optimizer goes ------------------------------------------------------------------
def test_apply_grad_processors_wraps_a_tf1_optimizer():
    model = Regression(lambda: apply_grad_processors(tfv1.train.GradientDescentOptimizer(0.05),
                                                     [GlobalNormClip(0.1)]))
    record = Record(model)
    train(model, max_epoch=1, callbacks=[record])
    params = [W0.astype(np.float64), np.zeros(1)]
    for k, (x, y) in enumerate(DATA):
        grads = gradients(params, x, y)
        norm = np.sqrt(sum((g * g).sum() for g in grads))
        params = [w - 0.05 * g * min(1.0, 0.1 / norm) for w, g in zip(params, grads)]
        for a, b in zip(record.weights[k], params):
            np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


def test_an_unsupported_tf1_optimizer_names_the_keras_one():
    model = Regression(lambda: tfv1.train.AdagradOptimizer(0.1))
    with pytest.raises(TypeError, match=r"Regression\.optimizer\(\): .*AdagradOptimizer is not supported.*"
                                        r"keras\.optimizers\.Adagrad"):
        train(model, max_epoch=1)


def test_replicated_trainer_trains_a_tf1_optimizer_like_the_simple_one(cpus):
    import tf1_optimizer_cases

    for optimizer in ("adam", "nesterov", "rmsprop"):
        result = cpus.run(tf1_optimizer_cases.replicated_equals_simple, optimizer)
        assert result["stand_in"].startswith("TF1")
        assert result["same_on_devices"], optimizer
        assert result["max_diff"] <= 1e-6, (optimizer, result)
