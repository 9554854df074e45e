"""tensorpack 0.11's ``MultiTowerOfflinePredictor``, ``DataParallelOfflinePredictor`` and
``MultiThreadAsyncPredictor`` on the towers layer's predictors, measured against the model's formula
(``y = x @ W + b`` with restored weights) on '/cpu:0' towers (no GPU here) or GPUs; and ``PredictConfig`` of a
plain tower function using tensorpack's layers."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import tensorflow as tf
from linear_predict_cases import B, W, config  # by name (this folder is on sys.path, see conftest.py)

from trainstack.tensorpack import (
    DataParallelOfflinePredictor,
    MultiThreadAsyncPredictor,
    MultiTowerOfflinePredictor,
    OfflinePredictor,
    OnlinePredictor,
    PredictorBase,
)

RNG = np.random.RandomState(1)


def test_multi_tower_predictor_gives_one_restored_predictor_per_tower():
    pred = MultiTowerOfflinePredictor(config(), [0, 1])
    x = RNG.rand(4, 3).astype(np.float32)
    y, s = pred(x)
    np.testing.assert_allclose(y, x @ W + B, rtol=1e-6)
    np.testing.assert_allclose(s, x.sum(1), rtol=1e-6)
    towers = pred.get_predictors()
    assert [p.tower_name for p in towers] == ["tower0", "tower1"]
    want_device = "/gpu:1" if tf.config.list_logical_devices("GPU") else "/cpu:0"
    assert towers[1].device == want_device
    for p in towers:
        np.testing.assert_allclose(p(x)[0], x @ W + B, rtol=1e-6)
    assert pred.get_predictor(3) == [towers[0], towers[1], towers[0]]
    (inputs, outputs) = MultiTowerOfflinePredictor(config(return_input=True), [0])(x)
    assert inputs[0] is x and np.allclose(outputs[0], x @ W + B)


def test_data_parallel_predictor_takes_and_gives_each_towers_arrays_in_turn():
    pred = DataParallelOfflinePredictor(config(), [0, 1])
    x0, x1 = RNG.rand(2, 3).astype(np.float32), RNG.rand(5, 3).astype(np.float32)
    y0, s0, y1, s1 = pred(x0, x1)
    np.testing.assert_allclose(y0, x0 @ W + B, rtol=1e-6)
    np.testing.assert_allclose(y1, x1 @ W + B, rtol=1e-6)
    np.testing.assert_allclose(s0, x0.sum(1), rtol=1e-6)
    np.testing.assert_allclose(s1, x1.sum(1), rtol=1e-6)
    with pytest.raises(ValueError, match="2 arrays in all, got 1"):
        pred(x0)


def test_towers_must_be_gpu_ids():
    with pytest.raises(ValueError, match="non-empty list of GPU ids"):
        MultiTowerOfflinePredictor(config(), [])


def test_async_predictor_batches_queued_datapoints_and_resolves_each_future():
    calls = []
    offline = OfflinePredictor(config())

    def predictor(x):  # records each batch it was called on
        calls.append(len(x))
        return offline(x)

    xs = RNG.rand(12, 3).astype(np.float32)
    done = []
    async_pred = MultiThreadAsyncPredictor([predictor], batch_size=5)
    futures = [async_pred.put_task([x], callback=lambda f: done.append(f)) for x in xs]  # queued before start
    with async_pred:
        results = [f.result(timeout=30) for f in futures]
        assert np.allclose(async_pred(xs[0])[0], xs[0] @ W + B)
    for x, (y, s) in zip(xs, results):
        np.testing.assert_allclose(y, x @ W + B, rtol=1e-6)
        np.testing.assert_allclose(s, x.sum(), rtol=1e-6)
    assert calls[:3] == [5, 5, 2] and len(done) == 12  # batches of at most batch_size, without waiting
    assert not any(t.is_alive() for t in async_pred.threads)
    assert not [t for t in threading.enumerate() if t.name.startswith("PredictorWorkerThread")]


def test_async_predictor_passes_a_predictors_error_to_the_future():
    def broken(x):
        raise RuntimeError("boom")

    with MultiThreadAsyncPredictor([broken, broken]) as pred:
        with pytest.raises(RuntimeError, match="boom"):
            pred.put_task([np.zeros(3)]).result(timeout=30)
    with pytest.raises(ValueError, match="return_input"):
        MultiThreadAsyncPredictor([OfflinePredictor(config(return_input=True))])


def test_predictor_base_is_tensorpacks_abstract_predictor():
    class Doubler(PredictorBase):
        def _do_call(self, dp):
            return [2 * x for x in dp]

    assert Doubler()(1, 2) == [2, 4]
    echo = Doubler()
    echo.return_input = True
    assert echo(3) == ((3,), [6])
    with pytest.raises(TypeError):
        PredictorBase()  # abstract, as tensorpack's
    assert issubclass(OnlinePredictor, PredictorBase) and isinstance(OfflinePredictor(config()), PredictorBase)
    assert issubclass(MultiThreadAsyncPredictor, PredictorBase) and issubclass(MultiTowerOfflinePredictor,
                                                                               PredictorBase)


def test_predict_config_builds_a_plain_tower_function_with_tensorpacks_layers():
    """PredictConfig(tower_func=<function>, input_signature=...) builds the function in the TF1 room, as
    tensorpack's inference scripts (examples/CaffeModels) need: its layers, argscope and variable names."""
    from trainstack.tensorpack import FullyConnected, PredictConfig, argscope

    def tower_func(x):
        with argscope(FullyConnected, activation=tf.nn.relu):
            FullyConnected("fc", x, 2)
        tf.identity(x * 2, name="doubled")

    w, b = RNG.normal(size=(3, 2)).astype("float32"), np.float32([0.5, -0.5])
    pred = OfflinePredictor(PredictConfig(tower_func=tower_func, input_names=["input"],
                                          input_signature=[tf.TensorSpec((None, 3), tf.float32, "input")],
                                          output_names=["fc/output", "doubled"],
                                          session_init={"fc/W": w, "fc/b": b}))
    x = RNG.normal(size=(4, 3)).astype(np.float32)
    y, doubled = pred(x)
    np.testing.assert_allclose(y, np.maximum(x @ w + b, 0), rtol=1e-6)
    np.testing.assert_allclose(doubled, 2 * x)
    assert sorted(v.name for v in pred.tower_func.variables) == ["fc/W:0", "fc/b:0"]
