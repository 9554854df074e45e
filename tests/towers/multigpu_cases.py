"""Cases of the multi-GPU tests, run in a worker process that has several devices.

Logical CPU devices must be configured before TensorFlow initializes its
devices, which the pytest process has long done (other tests' tensors), and
they would then be there for every other test too. So the multi-device
cases run in one spawned worker process per pytest process
(:func:`device_pool`), configured at its start with 4 logical CPU devices
(or, for ``gpu`` tests, the GPUs, a single GPU split in two). Tests call
``device_pool(kind).run(case, *args)``; an assertion failing in the worker is
raised in the test with the worker's traceback.

The module lives in a plain file (not a test file) because the worker imports
it by name: the tests put this directory on ``sys.path`` and the worker gets
it too. Each case takes the worker's device names first.
"""
from __future__ import annotations

import atexit
import concurrent.futures
import multiprocessing
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
NUM_CPU_DEVICES = 4
NUM_FEATURES = 4
#: relative and absolute tolerance of "the same SGD step" (float32 sums in another order)
RTOL, ATOL = 1e-5, 1e-6


# -- the worker process ----------------------------------------------------------------------
class DevicePool:
    """A worker process whose TensorFlow has several devices; runs cases there."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=1, mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker, initargs=(HERE, kind))
        self._devices: list[str] | None = None

    @property
    def devices(self) -> list[str]:
        if self._devices is None:
            self._devices = self.run_raw(worker_devices)
        return self._devices

    def run_raw(self, case: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self._pool.submit(case, *args, **kwargs).result(timeout=300)

    def run(self, case: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``case(devices, *args, **kwargs)`` in the worker; its result or its exception."""
        return self.run_raw(case, self.devices, *args, **kwargs)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


_POOLS: dict[str, DevicePool] = {}


def device_pool(kind: str = "cpu") -> DevicePool:
    """This process's worker of ``kind`` (``'cpu'``: 4 logical CPU devices; ``'gpu'``: the GPUs)."""
    pool = _POOLS.get(kind)
    if pool is None:
        pool = _POOLS[kind] = DevicePool(kind)
    return pool


@atexit.register
def _close_pools() -> None:
    for pool in _POOLS.values():
        pool.close()


def _init_worker(path: str, kind: str) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if path not in sys.path:
        sys.path.insert(0, path)
    import logging

    import tensorflow as tf

    from trainstack.towers import RuntimeConfig

    logging.getLogger("trainstack").setLevel(logging.WARNING)
    if kind == "cpu":  # also on a machine with GPUs: hide them
        RuntimeConfig(logical_cpu_devices=NUM_CPU_DEVICES, visible_gpus=()).apply()
    else:
        gpus = tf.config.list_physical_devices("GPU")
        if len(gpus) == 1:  # two towers on one GPU: two logical GPUs of 4 GiB each
            tf.config.set_logical_device_configuration(
                gpus[0], [tf.config.LogicalDeviceConfiguration(memory_limit=4096)] * 2)
        else:
            RuntimeConfig(gpu_memory_growth=True).apply()


def worker_devices() -> list[str]:
    """The devices the cases train on: the GPUs, else the logical CPU devices."""
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    return [d.name.split("replica:0/task:0")[-1].replace("/job:localhost", "")
            for d in (gpus or tf.config.list_logical_devices("CPU"))]


# -- the model and the data ------------------------------------------------------------------
def make_model(**kwargs: Any) -> Any:
    """A two-layer classifier (no batch statistics): inputs ``x`` [None, 4], ``label``
    [None] and, with ``with_ids``, ``ids`` [None] (each datapoint's number, recorded in
    ``model.seen``, a counter per datapoint created outside the tower function)."""
    import keras
    import tensorflow as tf

    from trainstack.callbacks import add_moving_summary
    from trainstack.towers import ModelDesc, get_current_tower_context

    class Classifier(ModelDesc):
        def __init__(self, learning_rate: float = 0.5, optimizer: str = "sgd", with_ids: int = 0,
                     clip: float | None = None) -> None:
            self.hidden = keras.layers.Dense(6, activation="tanh")
            self.fc = keras.layers.Dense(2)
            self.learning_rate = learning_rate
            self.opt_name = optimizer
            self.clip = clip
            self.with_ids = with_ids
            self.seen = tf.Variable(tf.zeros([max(with_ids, 1)], tf.int32), trainable=False)
            self.towers_built: list[str] = []

        def inputs(self):
            specs = [tf.TensorSpec([None, NUM_FEATURES], tf.float32, "x"),
                     tf.TensorSpec([None], tf.int32, "label")]
            return specs + ([tf.TensorSpec([None], tf.int32, "ids")] if self.with_ids else [])

        def build_graph(self, x, label, ids=None):
            ctx = get_current_tower_context()
            self.towers_built.append(ctx.name)
            logits = tf.identity(self.fc(self.hidden(x)), name="logits")
            cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits),
                                  name="cost")
            correct = tf.equal(tf.argmax(logits, axis=1, output_type=tf.int32), label)
            tf.identity(tf.reduce_mean(tf.cast(correct, tf.float32)), name="accuracy")
            if ids is not None and ctx.is_training:
                self.seen.scatter_nd_add(ids[:, None], tf.ones_like(ids))
            add_moving_summary(cost)
            return cost

        def optimizer(self):
            from trainstack.towers import GlobalNormClip, apply_grad_processors

            if self.opt_name == "adam":
                opt = keras.optimizers.Adam(self.learning_rate)
            elif self.opt_name == "momentum":
                opt = keras.optimizers.SGD(self.learning_rate, momentum=0.9)
            else:
                opt = keras.optimizers.SGD(self.learning_rate)
            return opt if self.clip is None else apply_grad_processors(opt, [GlobalNormClip(self.clip)])

    return Classifier(**kwargs)


def make_batches(n: int, batch: int = 8, seed: int = 0, with_ids: bool = False) -> list:
    """``n`` batches ``(x, label[, ids])`` of two Gaussian blobs; ids number the datapoints."""
    rng = np.random.default_rng(seed)
    batches = []
    for i in range(n):
        label = rng.integers(0, 2, size=batch).astype("int32")
        x = (rng.normal(size=(batch, NUM_FEATURES)) + 1.5 * label[:, None]).astype("float32")
        ids = np.arange(i * batch, (i + 1) * batch, dtype="int32")
        batches.append((x, label, ids) if with_ids else (x, label))
    return batches


def concat(batches: list) -> tuple:
    return tuple(np.concatenate(parts) for parts in zip(*batches))


def weights(model: Any) -> list[np.ndarray]:
    return [np.array(w.numpy()) for layer in (model.hidden, model.fc) for w in layer.weights]


def set_weights(model: Any, values: list[np.ndarray]) -> None:
    for w, v in zip([w for layer in (model.hidden, model.fc) for w in layer.weights], values):
        w.assign(v)


def make_trainer(name: str, gpus: Any, **kwargs: Any) -> Any:
    import trainstack.towers as towers

    return getattr(towers, name)(gpus, **kwargs)


def setup(trainer: Any, model: Any, input: Any) -> Any:
    trainer.setup_graph(model.get_input_signature(), input, model.build_graph, model.get_optimizer)
    return trainer


def train(trainer: Any, steps: int, callbacks: tuple = ()) -> list[float]:
    """Train ``steps`` steps (one epoch); return the cost of each, fetched from the step."""
    from trainstack.callbacks import ProcessTensors

    costs: list[float] = []
    trainer.train([ProcessTensors(["cost"], lambda c: costs.append(float(c))), *callbacks], [],
                  steps_per_epoch=steps, max_epoch=1)
    return costs


def simple_reference(before: list[np.ndarray], batch: tuple, learning_rate: float = 0.5,
                     **model_kwargs: Any) -> list[np.ndarray]:
    """The weights after one SimpleTrainer step on ``batch``, starting from ``before``."""
    from trainstack.inputs import FeedInput
    from trainstack.towers import SimpleTrainer

    ref = make_model(learning_rate=learning_rate, **model_kwargs)
    trainer = setup(SimpleTrainer(), ref, FeedInput([batch]))
    set_weights(ref, before)
    trainer.train([], [], steps_per_epoch=1, max_epoch=1)
    return weights(ref)


def mirrored_copies(variable: Any) -> list:
    """The per-device copies of a (Keras or TF) variable of the replicated trainer."""
    value = getattr(variable, "value", variable)
    return list(getattr(value, "values", [value]))


# -- cases: training -------------------------------------------------------------------------------
def first_step(devices: list[str], trainer_name: str, num_towers: int, learning_rate: float = 0.5,
               reference_rate: float | None = None, clip: float | None = None, **kwargs: Any) -> int:
    """One step of ``trainer_name`` with ``num_towers`` towers of batch 8 equals one SimpleTrainer
    step on the concatenated batches (learning rate ``reference_rate``, default the same; both
    clipping the gradients' global norm to ``clip`` if given); returns the optimizer's
    iterations after the step."""
    from trainstack.inputs import FeedInput

    batches = make_batches(num_towers, batch=8, seed=num_towers)
    model = make_model(learning_rate=learning_rate, clip=clip)
    trainer = setup(make_trainer(trainer_name, devices[:num_towers], **kwargs), model, FeedInput(batches))
    assert trainer.num_towers == num_towers and trainer.devices == devices[:num_towers]
    before = weights(model)
    train(trainer, 1)
    after = weights(model)
    assert max(np.abs(a - b).max() for a, b in zip(after, before)) > 1e-3, "the step changed nothing"
    expected = simple_reference(before, concat(batches), reference_rate or learning_rate, clip=clip)
    if clip is not None:  # the processor acted: the update's global norm is learning_rate * clip
        norm = np.sqrt(sum(np.sum((a - b) ** 2) for a, b in zip(after, before)))
        np.testing.assert_allclose(norm, learning_rate * clip, rtol=1e-4)
    for a, e in zip(after, expected):
        np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL)
    assert [n for n in model.towers_built if n.startswith("tower")][-num_towers:] == \
        [f"tower{k}" for k in range(num_towers)]
    return int(trainer.optimizer.iterations.numpy())


def no_batch_twice(devices: list[str], trainer_name: str, num_towers: int, input_kind: str,
                   steps: int = 3) -> None:
    """Over ``steps`` steps, the towers train on ``num_towers * steps`` different batches."""
    from trainstack.inputs import FeedInput, QueueInput, StagingInput

    batch = 4
    batches = make_batches(num_towers * (steps + 2), batch=batch, with_ids=True)
    model = make_model(with_ids=len(batches) * batch)
    source = {"feed": lambda: FeedInput(batches), "queue": lambda: QueueInput(batches),
              "staging": lambda: StagingInput(QueueInput(batches))}[input_kind]()
    trainer = setup(make_trainer(trainer_name, devices[:num_towers]), model, source)
    train(trainer, steps)
    seen = model.seen.numpy()
    assert seen.max() == 1, f"datapoints {np.flatnonzero(seen > 1).tolist()} reached two towers"
    assert seen.sum() == num_towers * steps * batch
    if input_kind == "feed":  # fed in order: the first num_towers * steps batches
        assert seen[:num_towers * steps * batch].all()


def ps_placement(devices: list[str], ps_device: str, num_towers: int) -> None:
    """The parameter-server trainer's variables live on the promised devices; slots beside them."""
    from trainstack.inputs import FeedInput

    towers = devices[:num_towers]
    model = make_model(optimizer="momentum")
    trainer = setup(make_trainer("SyncMultiGPUTrainerParameterServer", towers, ps_device=ps_device),
                    model, FeedInput(make_batches(2 * num_towers)))
    variables = trainer.tower_func.variables
    assert len(variables) == 4
    if ps_device == "cpu":
        expected = ["/device:CPU:0"] * len(variables)
    else:  # greedy: each variable on the device holding the fewest elements so far
        load, expected = [0] * num_towers, []
        for v in variables:
            k = int(np.argmin(load))
            load[k] += int(np.prod(v.shape))
            expected.append(towers[k])
    assert [_short(v.device) for v in variables] == expected
    if ps_device == "gpu" and num_towers > 1:
        assert len(set(expected)) > 1  # really spread
    slots = {s.path: _short(s.value.device) for s in trainer.optimizer.variables if "momentum" in s.path}
    assert len(slots) == len(variables)
    for v in variables:
        owner = [d for path, d in slots.items() if v.name.split(":")[0].replace("/", "_") in path]
        assert owner == [_short(v.device)], (v.name, slots)
    train(trainer, 2)
    assert [_short(v.device) for v in variables] == expected


def _short(device: str) -> str:
    import tensorflow as tf

    spec = tf.DeviceSpec.from_string(device)
    return f"/device:{spec.device_type}:{spec.device_index}"


def replicas_identical(devices: list[str], steps: int = 25, mode: str | None = None) -> None:
    """Replicated: every variable and optimizer slot has one copy per device, and the copies
    stay identical while training (Adam, one tower per device)."""
    from trainstack.inputs import FeedInput

    model = make_model(optimizer="adam", learning_rate=0.05)
    trainer = setup(make_trainer("SyncMultiGPUTrainerReplicated", devices, mode=mode), model,
                    FeedInput(make_batches(len(devices) * steps)))
    before = weights(model)
    costs = train(trainer, steps)
    assert np.mean(costs[-5:]) < np.mean(costs[:5])
    assert int(trainer.optimizer.iterations.numpy()) == steps
    every = [*model.hidden.weights, *model.fc.weights, *trainer.optimizer.variables]
    for v in every:
        copies = mirrored_copies(v)
        assert [_short(c.device) for c in copies] == devices, (v.path, [c.device for c in copies])
        first = copies[0].numpy()
        for c in copies[1:]:
            np.testing.assert_array_equal(c.numpy(), first, err_msg=v.path)
    assert all(np.abs(a - b).max() > 0 for a, b in zip(weights(model), before))


def optimizer_outside_strategy(devices: list[str]) -> None:
    from trainstack.inputs import FeedInput

    model = make_model()
    model.get_optimizer()  # cached, created outside the trainer's strategy
    try:
        setup(make_trainer("SyncMultiGPUTrainerReplicated", devices[:2]), model,
              FeedInput(make_batches(2)))
    except ValueError as e:
        assert "outside the trainer's MirroredStrategy" in str(e), e
    else:
        raise AssertionError("an optimizer made outside the strategy was accepted")


def missing_device(devices: list[str]) -> None:
    from trainstack.inputs import FeedInput

    try:
        setup(make_trainer("SyncMultiGPUTrainerParameterServer", ["/cpu:0", "/cpu:9"]), make_model(),
              FeedInput(make_batches(2)))
    except ValueError as e:
        assert "/device:CPU:9" in str(e) and "logical_cpu_devices" in str(e), e
    else:
        raise AssertionError("a missing device was accepted")


def logical_devices_helper(devices: list[str]) -> None:
    from trainstack.towers import logical_cpu_devices

    assert logical_cpu_devices(NUM_CPU_DEVICES) == [f"/device:CPU:{k}" for k in range(NUM_CPU_DEVICES)]
    try:
        logical_cpu_devices(2)
    except RuntimeError as e:
        assert "logical_cpu_devices" in str(e), e
    else:
        raise AssertionError("changing the devices after TensorFlow started was accepted")


# -- cases: checkpoints ----------------------------------------------------------------------------
def checkpoints(devices: list[str], trainer_name: str, tmpdir: str) -> None:
    """A checkpoint of the multi-GPU trainer restores into SimpleTrainer and an OfflinePredictor;
    one of SimpleTrainer restores into the multi-GPU trainer (every copy of a variable)."""
    from trainstack.callbacks import ModelSaver
    from trainstack.inputs import FeedInput
    from trainstack.towers import OfflinePredictor, PredictConfig, SimpleTrainer, SmartInit

    x = make_batches(1, batch=5, seed=9)[0][0]
    multi_dir, simple_dir = os.path.join(tmpdir, "multi"), os.path.join(tmpdir, "simple")
    model = make_model(optimizer="momentum")
    multi = setup(make_trainer(trainer_name, devices[:2]), model, FeedInput(make_batches(6)))
    train(multi, 3, callbacks=(ModelSaver(checkpoint_dir=multi_dir),))
    trained = weights(model)
    iterations = int(multi.optimizer.iterations.numpy())  # 3, or 6 for the async trainer's 2 towers
    logits = multi.get_predictor(["x"], ["logits"])(x)[0]

    restored = make_model(optimizer="momentum")
    simple = setup(SimpleTrainer(), restored, FeedInput(make_batches(2)))
    SmartInit(multi_dir).init(simple)
    for a, b in zip(weights(restored), trained):
        np.testing.assert_array_equal(a, b)
    assert int(simple.optimizer.iterations.numpy()) == iterations
    np.testing.assert_allclose(simple.get_predictor(["x"], ["logits"])(x)[0], logits, rtol=1e-6, atol=1e-6)
    offline = OfflinePredictor(PredictConfig(model=make_model(), session_init=multi_dir, input_names=["x"],
                                             output_names=["logits"]))
    np.testing.assert_allclose(offline(x)[0], logits, rtol=1e-6, atol=1e-6)

    # and the other way round
    train(simple, 2, callbacks=(ModelSaver(checkpoint_dir=simple_dir),))
    saved = weights(restored)
    fresh = make_model(optimizer="momentum")
    other = setup(make_trainer(trainer_name, devices[:2]), fresh, FeedInput(make_batches(4)))
    SmartInit(simple_dir).init(other)
    for v, expected in zip([w for layer in (fresh.hidden, fresh.fc) for w in layer.weights], saved):
        for copy in mirrored_copies(v):
            np.testing.assert_array_equal(copy.numpy(), expected)
    assert int(other.optimizer.iterations.numpy()) == iterations + 2
    for slot in other.optimizer.variables:
        copies = mirrored_copies(slot)
        for c in copies[1:]:
            np.testing.assert_array_equal(c.numpy(), copies[0].numpy())
    train(other, 1)  # and it trains on from there


# -- cases: launch, inference, legacy ---------------------------------------------------------------
def launch(devices: list[str], trainer_name: str) -> None:
    """launch_train_with_config with a multi-GPU trainer: QueueInput + StagingInput, trains."""
    from trainstack.inputs import QueueInput, StagingInput
    from trainstack.towers import TrainConfig, launch_train_with_config

    costs: list[float] = []
    from trainstack.callbacks import ProcessTensors

    config = TrainConfig(dataflow=make_batches(8), model=make_model(), max_epoch=3, steps_per_epoch=4,
                         callbacks=[ProcessTensors(["cost"], lambda c: costs.append(float(c)))],
                         extra_callbacks=[], monitors=[])
    trainer = make_trainer(trainer_name, devices[:2])
    launch_train_with_config(config, trainer)
    assert isinstance(trainer.input, StagingInput) and isinstance(trainer.input.input, QueueInput)
    assert trainer.global_step == 12 and len(costs) == 12
    assert np.mean(costs[-4:]) < np.mean(costs[:4])


def default_epoch_warnings(devices: list[str], steps_per_epoch: int | None, via_config: bool) -> dict:
    """A 2-tower trainer on 6 batches, through launch_train_with_config or train_with_defaults:
    the warnings of the 'trainstack' logger and the steps the epoch made."""
    import logging

    from trainstack.inputs import QueueInput
    from trainstack.towers import TrainConfig, launch_train_with_config

    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append
    logging.getLogger("trainstack").addHandler(handler)
    try:
        trainer = make_trainer("SyncMultiGPUTrainerReplicated", devices[:2])
        if via_config:
            launch_train_with_config(TrainConfig(dataflow=make_batches(6), model=make_model(), max_epoch=1,
                                                 steps_per_epoch=steps_per_epoch, callbacks=[],
                                                 extra_callbacks=[], monitors=[]), trainer)
        else:
            model = make_model()
            trainer.setup_graph(model.get_input_signature(), QueueInput(make_batches(6)), model.build_graph,
                                model.get_optimizer)
            trainer.train_with_defaults(callbacks=[], extra_callbacks=[], monitors=[], max_epoch=1,
                                        steps_per_epoch=steps_per_epoch)
    finally:
        logging.getLogger("trainstack").removeHandler(handler)
    return {"warnings": [r.getMessage() for r in records], "steps": trainer.global_step}


def data_parallel_inference(devices: list[str], num_towers: int) -> None:
    """DataParallelInferenceRunner over ``num_towers`` towers gives InferenceRunner's statistics,
    each validation datapoint exactly once per pass (5 batches: the last ones through one tower),
    while a replicated trainer trains."""
    from trainstack.inputs import FeedInput
    from trainstack.loop import MonitorBase
    from trainstack.towers import DataParallelInferenceRunner, Inferencer, InferenceRunner, ScalarStats

    class Ids(Inferencer):
        def __init__(self) -> None:
            self.passes: list[list[int]] = []

        def _get_fetches(self):
            return ["ids"]

        def _before_inference(self):
            self.passes.append([])

        def _on_fetches(self, results):
            self.passes[-1].extend(results[0].tolist())

        def _after_inference(self):
            return {}

    class Recorder(MonitorBase):
        def __init__(self) -> None:
            self.scalars: dict[str, list[float]] = {}

        def process_scalar(self, name, value):
            self.scalars.setdefault(name, []).append(float(value))

    valid = make_batches(5, batch=6, seed=3, with_ids=True)
    valid[-1] = tuple(part[:3] for part in valid[-1])  # a smaller last batch
    ids = Ids()
    runner = DataParallelInferenceRunner(valid, [ScalarStats(["cost", "accuracy"], prefix="dp"), ids],
                                         devices[:num_towers], tower_name="DPTower")
    single = InferenceRunner(list(valid), ScalarStats(["cost", "accuracy"], prefix="one"))
    recorder = Recorder()
    model = make_model(with_ids=64)
    trainer = setup(make_trainer("SyncMultiGPUTrainerReplicated", devices[:2]), model,
                    FeedInput(make_batches(8, with_ids=True)))
    trainer.train([runner, single], [recorder], steps_per_epoch=2, max_epoch=2)
    for name in ("cost", "accuracy"):
        dp, one = recorder.scalars[f"dp_{name}"], recorder.scalars[f"one_{name}"]
        assert len(dp) == 2
        np.testing.assert_allclose(dp, one, rtol=1e-5, atol=1e-6)
    everything = sorted(int(i) for batch in valid for i in batch[2])
    assert len(ids.passes) == 2 and all(sorted(p) == everything for p in ids.passes)
    assert [h.name for h in trainer.tower_func.towers.inference() if h.name.startswith("DPTower")] == \
        [f"DPTower{k}" for k in range(num_towers)]


def legacy_constructors(devices: list[str], tmpdir: str) -> None:
    """The 003 constructors: TrainConfig first, towers from nr_tower/tower, train()."""
    import warnings

    import trainstack.tensorpack.tf1 as tp  # the older forms are the tensorpack layer's trainers' and TrainConfig's
    from trainstack.inputs import StagingInput

    def config(**kwargs: Any) -> Any:
        return tp.TrainConfig(dataflow=make_batches(6), model=make_model(), max_epoch=1,
                              steps_per_epoch=2, extra_callbacks=[], monitors=[], **kwargs)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        replicated = tp.SyncMultiGPUTrainerReplicated(config(nr_tower=2), gpu_prefetch=True)
        ps = tp.SyncMultiGPUTrainerParameterServer(config(tower=[0, 1]), ps_device="cpu")
        alias = tp.SyncMultiGPUTrainer(config(nr_tower=2))
        asynchronous = tp.AsyncMultiGPUTrainer(config(nr_tower=2), False)
    assert sum(issubclass(w.category, DeprecationWarning) for w in caught) >= 4
    assert replicated.devices == ps.devices == devices[:2]
    assert (ps.ps_device, alias.ps_device) == ("cpu", "gpu")
    assert type(alias) is tp.SyncMultiGPUTrainerParameterServer
    assert asynchronous.scale_gradient is False
    for trainer in (replicated, ps, alias, asynchronous):
        trainer.train()
        assert trainer.global_step == 2 and isinstance(trainer.input, StagingInput)
    assert int(asynchronous.optimizer.iterations.numpy()) == 4  # two towers, two updates per step
    too_many = tp.SyncMultiGPUTrainerReplicated(config(nr_tower=len(devices) + 1))
    try:
        too_many.train()
    except ValueError as e:
        assert f"CPU:{len(devices)}" in str(e) or f"GPU:{len(devices)}" in str(e), e
    else:
        raise AssertionError("nr_tower beyond the devices was accepted")


def least_loaded_setter(devices: list[str], tensorpack: bool = False) -> None:
    """LeastLoadedPlacement (``tensorpack``: the tensorpack layer's LeastLoadedDeviceSetter, its subclass) as
    a context manager: variables by load, ops on the worker device."""
    import tensorflow as tf

    if tensorpack:
        from trainstack.tensorpack.graph_builder.utils import LeastLoadedDeviceSetter as Placement
    else:
        from trainstack.towers import LeastLoadedPlacement as Placement

    setter = Placement(devices[1], devices[:3])
    with setter:
        a = tf.Variable(tf.zeros([10]))
        b = tf.Variable(tf.zeros([4]))
        c = tf.Variable(lambda: tf.ones([3]))
        d = tf.Variable(tf.zeros([2]))
        e = tf.Variable(tf.zeros([1]))
        y = a[:2] + 1.0
    assert [_short(v.device) for v in (a, b, c, d, e)] == \
        [devices[0], devices[1], devices[2], devices[2], devices[1]]
    assert setter.ps_sizes == [10, 5, 5]
    assert _short(y.device) == devices[1]


def gpu_suite(devices: list[str]) -> str:
    """The GPU run: the equivalence and replica tests on the GPUs; returns what ran where."""
    mode = None if len(devices) > 1 and _distinct_physical_gpus() else "hierarchical"
    assert first_step(devices, "SyncMultiGPUTrainerReplicated", 2, mode=mode) == 1
    assert first_step(devices, "SyncMultiGPUTrainerParameterServer", 2, ps_device="gpu") == 1
    assert first_step(devices, "SyncMultiGPUTrainerParameterServer", 2, ps_device="cpu") == 1
    assert first_step(devices, "AsyncMultiGPUTrainer", 2) == 2
    replicas_identical(devices[:2], steps=10, mode=mode)
    no_batch_twice(devices, "SyncMultiGPUTrainerReplicated", 2, "staging")
    return f"devices {devices}, all-reduce mode {mode or 'nccl'}"


def _distinct_physical_gpus() -> bool:
    import tensorflow as tf

    return len(tf.config.list_physical_devices("GPU")) > 1


def batch_norm_copies_synced(devices: list[str], broadcast: bool) -> None:
    """Replicated with BatchNormalization: each tower updates its device's moving statistics;
    with BROADCAST_EVERY_EPOCH the first device's are copied to the others after each epoch."""
    import keras
    import tensorflow as tf

    from trainstack.inputs import FeedInput
    from trainstack.towers import ModelDesc, get_current_tower_context

    class WithBatchNorm(ModelDesc):
        def __init__(self) -> None:
            self.dense = keras.layers.Dense(4)
            self.bn = keras.layers.BatchNormalization()
            self.fc = keras.layers.Dense(2)

        def inputs(self):
            return [tf.TensorSpec([None, NUM_FEATURES], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]

        def build_graph(self, x, label):
            h = self.bn(self.dense(x), training=get_current_tower_context().is_training)
            return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=self.fc(h)))

        def optimizer(self):
            return keras.optimizers.SGD(0.1)

    model = WithBatchNorm()
    trainer = make_trainer("SyncMultiGPUTrainerReplicated", devices[:2])
    trainer.BROADCAST_EVERY_EPOCH = broadcast
    setup(trainer, model, FeedInput(make_batches(8)))
    trainer.train([], [], steps_per_epoch=3, max_epoch=1)
    copies = [c.numpy() for c in mirrored_copies(model.bn.moving_mean)]
    if broadcast:
        np.testing.assert_array_equal(copies[0], copies[1])
    else:  # each device kept its own towers' statistics
        assert np.abs(copies[0] - copies[1]).max() > 1e-6
    np.testing.assert_array_equal(model.bn.moving_mean.numpy(), copies[0])  # what is read and saved
