"""tensorpack's ``MultiProcessDatasetPredictor``: spawned worker processes, each restoring the linear
model of ``linear_predict_cases`` (importable there: this folder is on the workers' ``sys.path``),
measured against its formula; ordered and as finished, ``return_input``; GPU assignment through
``CUDA_VISIBLE_DEVICES``; a worker that cannot start, raises on a datapoint or is killed is an error
naming it (never a hang); and every worker process ends (closed, failed or collected)."""
from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sys
import types

import numpy as np
import pytest
from linear_predict_cases import B, W, config  # by name (this folder is on sys.path, see conftest.py)

from trainstack.dataflow import DataFromList
from trainstack.tensorpack import MultiProcessDatasetPredictor, OfflinePredictor, PredictConfig
from trainstack.tensorpack.predict.dataset import MultiProcessDatasetPredictor as AtTensorpacksPath

RNG = np.random.RandomState(2)
XS = [RNG.rand(2, 3).astype(np.float32) for _ in range(7)]


def dataflow(xs=XS):
    return DataFromList([[x] for x in xs], shuffle=False)


def child_pids() -> set[int]:
    """This process's child processes (psutil's, else read from /proc), but multiprocessing's resource
    tracker: the first spawned process of a program starts it, and it serves the program until it exits."""
    try:
        import psutil
    except ImportError:
        pids = set()
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    command = f.read().decode(errors="replace")
            except OSError:
                continue
            if parent == os.getpid() and "resource_tracker" not in command:
                pids.add(int(entry))
        return pids
    children = set()
    for p in psutil.Process().children(recursive=True):
        try:
            if "resource_tracker" not in " ".join(p.cmdline()):
                children.add(p.pid)
        except psutil.NoSuchProcess:
            pass
    return children


def assert_ended(pred, before):
    """Every worker of ``pred`` ended and was reaped: no child process is left beyond ``before``."""
    pids = {p.pid for p in pred.workers}
    assert not any(p.is_alive() for p in pred.workers)
    assert not pids & {p.pid for p in multiprocessing.active_children()}
    assert child_pids() <= before and not pids & child_pids()


def test_ordered_on_one_gpu_each_then_a_killed_worker_is_named(monkeypatch):
    """Worker k sees only GPU k of CUDA_VISIBLE_DEVICES (none exists here: TensorFlow runs on the CPU);
    each pass gives the formula's outputs in the dataflow's order, also after a pass left unfinished;
    a worker SIGKILLed during a pass makes get_result() raise naming it, and the other worker is ended
    too."""
    before = child_pids()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    pred = MultiProcessDatasetPredictor(config(), dataflow(), 2)
    monkeypatch.undo()
    assert len(pred.workers) == 2 and all(p.is_alive() for p in pred.workers)
    results = list(pred.get_result())
    assert [w.ready["CUDA_VISIBLE_DEVICES"] for w in pred._workers] == ["3", "5"]
    assert len(results) == len(XS)
    for x, (y, s) in zip(XS, results):
        np.testing.assert_allclose(y, x @ W + B, rtol=1e-6)
        np.testing.assert_allclose(s, x.sum(1), rtol=1e-6)
    abandoned = pred.get_result()
    next(abandoned)
    abandoned.close()  # its datapoints in flight are answered later, and dropped
    again = pred.get_all_result()  # another pass, same workers
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(results, again)) and len(again) == len(XS)

    third = pred.get_result()
    np.testing.assert_allclose(next(third)[0], XS[0] @ W + B, rtol=1e-6)
    victim = pred.workers[1]
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(30)
    with pytest.raises(RuntimeError, match=rf"worker 1 \(pid {victim.pid}, on GPU 5\) exited with exit code -9 "
                                           r"\(killed by SIGKILL\)"):
        list(third)
    assert_ended(pred, before)
    with pytest.raises(RuntimeError, match="ended when a pass failed .*killed by SIGKILL.*make a new predictor"):
        next(pred.get_result())


def test_as_finished_with_return_input_on_the_cpu():
    """ordered=False: every datapoint once, as the workers finish them, each with its inputs
    (return_input) and the formula's outputs; use_gpu=False hides the GPUs; `with` ends the workers,
    also under an iteration in progress, which then says so."""
    before = child_pids()
    with MultiProcessDatasetPredictor(config(return_input=True), dataflow(), 2, use_gpu=False,
                                      ordered=False) as pred:
        results = pred.get_all_result()
        assert [(w.ready["CUDA_VISIBLE_DEVICES"], w.ready["gpus"]) for w in pred._workers] == [("", 0), ("", 0)]
        assert all(w.answered >= 2 for w in pred._workers)  # both predicted (at most 2 each in flight)
        suspended = pred.get_result()
        next(suspended)
    assert_ended(pred, before)
    with pytest.raises(RuntimeError, match="closed during get_result"):
        next(suspended)
    assert len(results) == len(XS)
    for (x,), (y, s) in results:
        np.testing.assert_allclose(y, x @ W + B, rtol=1e-6)
        np.testing.assert_allclose(s, x.sum(1), rtol=1e-6)
    assert sorted(float(x.sum()) for (x,), _ in results) == sorted(float(x.sum()) for x in XS)
    with pytest.raises(RuntimeError, match="after close"):
        next(pred.get_result())


def test_a_model_the_workers_cannot_import_is_an_error_not_a_hang(monkeypatch):
    """The config's model class is in a module this process has and the workers cannot import
    (as a test module's class is under --import-mode=importlib): get_result() raises the workers'
    start-up error, with their traceback."""
    module = types.ModuleType("mpdp_only_here")
    exec("from linear_predict_cases import Linear\nclass Here(Linear):\n    pass\n", module.__dict__)
    monkeypatch.setitem(sys.modules, "mpdp_only_here", module)
    cfg = PredictConfig(model=module.Here(), input_names=["x"], output_names=["y"])
    before = child_pids()
    pred = MultiProcessDatasetPredictor(cfg, dataflow(), 1, use_gpu=False)
    with pytest.raises(RuntimeError, match=r"(?s)worker 0 \(pid \d+, on the CPU\) failed to start: unpickling the PredictConfig raised "
                                           r"ModuleNotFoundError: No module named 'mpdp_only_here'.*Traceback"):
        pred.get_all_result()
    assert_ended(pred, before)


SCRIPT = """
import tensorflow as tf

from trainstack.tensorpack import ModelDesc


class Model(ModelDesc):
    autograph = True  # its build_graph branches on a tensor

    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x")]

    def build_graph(self, x):
        if tf.reduce_sum(x) > 0:  # Python control flow on a tensor: AutoGraph must read this source
            y = 2 * x
        else:
            y = -x
        tf.identity(y, name="y")


if __name__ == "__main__":
    raise SystemExit("a spawned worker imports this script as __mp_main__, not as __main__")
"""


def test_a_model_of_the_main_script_reaches_the_workers_with_its_source(monkeypatch, tmp_path):
    """As ``python script.py`` with the model in the script: the config goes by reference to
    ``__main__.Model``, which the workers find in the script that spawn imports again, so AutoGraph
    reads its source there (a model sent by value has none: its ``if`` on a tensor would fail)."""
    script = tmp_path / "predict_script.py"
    script.write_text(SCRIPT)
    main = types.ModuleType("__main__")
    main.__file__ = str(script)
    exec(compile(SCRIPT.replace('if __name__ == "__main__"', "if False"), str(script), "exec"), main.__dict__)
    monkeypatch.setitem(sys.modules, "__main__", main)
    xs = [np.ones((2, 3), np.float32), -np.ones((2, 3), np.float32)]
    with MultiProcessDatasetPredictor(PredictConfig(model=main.Model(), output_names=["y"]), dataflow(xs), 1,
                                      use_gpu=False) as pred:
        (up,), (down,) = pred.get_all_result()
    np.testing.assert_array_equal(up, 2 * xs[0])
    np.testing.assert_array_equal(down, -xs[1])


def test_a_worker_raising_on_a_datapoint_is_an_error_naming_it():
    """A datapoint of the wrong shape: the worker's exception, naming the datapoint, ends the pass and
    the workers; what came before it is the formula's."""
    before = child_pids()
    xs = [*XS[:3], np.zeros((2, 4), np.float32), *XS[3:]]
    pred = MultiProcessDatasetPredictor(config(), dataflow(xs), 1, use_gpu=False)
    got = []
    with pytest.raises(RuntimeError, match=r"(?s)worker 0 \(pid \d+, on the CPU\) raised on datapoint 3: .*"
                                           r"The worker's traceback"):
        for outputs in pred.get_result():
            got.append(outputs)
    assert len(got) == 3
    for x, (y, _) in zip(XS, got):
        np.testing.assert_allclose(y, x @ W + B, rtol=1e-6)
    assert_ended(pred, before)


def test_collecting_the_predictor_ends_its_workers():
    before = child_pids()
    pred = MultiProcessDatasetPredictor(config(), dataflow(), 1, use_gpu=False)
    workers = pred.workers
    del pred
    gc.collect()
    assert not any(p.is_alive() for p in workers)
    assert child_pids() <= before


def test_a_config_that_cannot_be_pickled_is_named_before_any_worker_starts():
    """A config some predictor was built from holds its traced tower: the TypeError names that part."""
    cfg = config()
    OfflinePredictor(cfg)
    before = child_pids()
    with pytest.raises(TypeError, match=r"config\.tower_func\.towers\..* cannot be pickled: .*"
                                        r"pass a new PredictConfig"):
        MultiProcessDatasetPredictor(cfg, dataflow(), 2, use_gpu=False)
    assert child_pids() == before


def test_use_gpu_needs_one_gpu_per_process(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    with pytest.raises(ValueError, match=r"nr_proc=2\): only 1 GPU\(s\).*use_gpu=False"):
        MultiProcessDatasetPredictor(config(), dataflow(), 2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    with pytest.raises(ValueError, match=r"nr_proc=1\): only 0 GPU\(s\).*use_gpu=False"):
        MultiProcessDatasetPredictor(config(), dataflow(), 1)


def test_tensorpacks_module_path_is_the_class():
    assert AtTensorpacksPath is MultiProcessDatasetPredictor
