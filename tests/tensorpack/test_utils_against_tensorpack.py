"""tensorpack's pure-Python utilities (``tensorpack.utils.*``) in trainstack.tensorpack give what tensorpack
0.11's own give on the same inputs: tensorpack.utils imports without TF1, so each test runs both."""
from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import pickle
import threading
import time

import numpy as np
import pytest

from trainstack.tensorpack._replaced import is_stand_in

MODULES = ["stats", "argtools", "utils", "timer", "fs", "develop", "serialize", "palette", "naming", "gpu",
           "concurrency", "debug", "compatible_serialize"]


def pair(name: str):
    """(tensorpack's ``tensorpack.utils.<name>``, trainstack's mirror of it)."""
    return (importlib.import_module(f"tensorpack.utils.{name}"),
            importlib.import_module(f"trainstack.tensorpack.utils.{name}"))


def record_logs(monkeypatch, logger_module) -> list[tuple[str, str]]:
    """Replace the logging functions of a logger module by recorders; return what they record."""
    seen: list[tuple[str, str]] = []
    for level in ("info", "warn", "warning", "error"):
        monkeypatch.setattr(logger_module, level, lambda msg, _level=level: seen.append((_level, str(msg))),
                            raising=False)
    return seen


@pytest.fixture
def logs(monkeypatch):
    """The log lines of tensorpack's logger and trainstack's, recorded separately."""
    import tensorpack.utils.logger as tp_logger

    from trainstack.callbacks import logger as ts_logger

    return record_logs(monkeypatch, tp_logger), record_logs(monkeypatch, ts_logger)


def test_every_public_name_of_the_utils_modules_is_written():
    for name in MODULES:
        tp, ts = pair(name)
        public = getattr(tp, "__all__", None) or [n for n in ("loads", "dumps", "enable_call_trace",
                                                              "GLOBAL_STEP_INCR_OP_NAME", "MOVING_SUMMARY_OPS_KEY")
                                                  if hasattr(tp, n)]
        for n in public:
            assert not is_stand_in(getattr(ts, n)), f"{name}.{n}"


@pytest.mark.parametrize("values", [[3.0, 1.0, 2.5], [np.array([1.0, 2.0]), np.array([3.0, -1.0])], [7]])
def test_stat_counter(values):
    tp, ts = pair("stats")
    a, b = tp.StatCounter(), ts.StatCounter()
    for v in values:
        a.feed(v), b.feed(v)
    attrs = ("count", "average", "sum") + (("max", "min") if np.isscalar(values[0]) else ())
    for attr in attrs:
        np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr))
    assert len(b.samples()) == len(a.samples()) == len(values)
    a.reset(), b.reset()
    assert a.count == b.count == 0
    with pytest.raises(AssertionError):
        a.average  # noqa: B018
    with pytest.raises(AssertionError):
        b.average  # noqa: B018


def test_ratio_counter_accuracy_binary_statistics_and_online_moments():
    tp, ts = pair("stats")
    for cls in ("RatioCounter", "Accuracy"):
        a, b = getattr(tp, cls)(), getattr(ts, cls)()
        assert a.ratio == b.ratio == 0
        for count, total in [(3, 10), (1, 1), (0, 5)]:
            a.feed(count, total), b.feed(count, total)
        b.feed(1), a.feed(1)
        assert (a.ratio, a.total, a.count) == (b.ratio, b.total, b.count) == (5 / 17, 17, 5)
    assert tp.Accuracy().accuracy == ts.Accuracy().accuracy == 0
    rng = np.random.RandomState(0)
    a, b = tp.BinaryStatistics(), ts.BinaryStatistics()
    for _ in range(3):
        pred, label = rng.randint(0, 2, size=20), rng.randint(0, 2, size=20)
        a.feed(pred, label), b.feed(pred, label)
    for attr in ("precision", "recall", "false_positive", "false_negative", "nr_pos", "nr_neg", "corr_pos"):
        assert getattr(a, attr) == getattr(b, attr), attr
    with pytest.raises(AssertionError, match=r"\(3,\) != \(2,\)"):
        b.feed(np.ones(3), np.ones(2))
    a, b = tp.OnlineMoments(), ts.OnlineMoments()
    xs = rng.randn(50)
    for x in xs:
        a.feed(x), b.feed(x)
    assert (a.mean, a.variance, a.std) == (b.mean, b.variance, b.std)
    assert b.variance == pytest.approx(np.var(xs, ddof=1))


def test_argtools():
    tp, ts = pair("argtools")
    for value in [3, (2, 5), [4, 1]]:
        assert ts.shape2d(value) == tp.shape2d(value)
        for fmt in ("NHWC", "NCHW", "channels_first", "channels_last"):
            assert ts.shape4d(value, fmt) == tp.shape4d(value, fmt)
    for bad, error in [((1, 2, 3), AssertionError), ("x", RuntimeError), (2.0, RuntimeError)]:
        with pytest.raises(error):
            tp.shape2d(bad)
        with pytest.raises(error):
            ts.shape2d(bad)
    with pytest.raises(ValueError, match="Unknown data_format"):
        ts.shape4d(2, "NWHC")

    def f(a, b, c=3):
        return (a, b, c)

    for mod in (tp, ts):
        g = mod.map_arg(b=lambda x: x * 10, c=str)(f)
        assert g(1, 2) == (1, 20, 3) and g(1, b=2, c=4) == (1, 20, "4")
    calls = {"tp": [], "ts": []}
    for key, mod in (("tp", tp), ("ts", ts)):
        h = mod.memoized_ignoreargs(lambda x, _k=key: calls[_k].append(x) or x * 2)
        assert [h(1), h(5), h(9)] == [2, 2, 2]
    assert calls == {"tp": [1], "ts": [1]}


def test_log_once_logs_each_message_once(logs):
    tp, ts = pair("argtools")
    for mod in (tp, ts):
        mod.log_once("same message", "warn")
        mod.log_once("same message", "warn")
        mod.log_once("other", "info")
    assert logs[0] == logs[1] == [("warn", "same message"), ("info", "other")]


def test_graph_memoized_keeps_one_cache_per_graph():
    import tensorflow as tf

    _, ts = pair("argtools")
    calls = []
    f = ts.graph_memoized(lambda x: calls.append(x) or object())
    first = f(1)
    assert f(1) is first and calls == [1]
    with tf.Graph().as_default():
        other = f(1)
        assert other is not first and f(1) is other
    assert f(1) is first and calls == [1, 1]


@pytest.mark.parametrize("sec", [0, 0.01, 1, 2, 59.5, 60, 61, 87.6, 3600, 3601, 86401, 86400 * 3 + 3600 * 9 + 120 + 3])
def test_humanize_time_delta(sec):
    tp, ts = pair("utils")
    assert ts.humanize_time_delta(sec) == tp.humanize_time_delta(sec)


def test_change_env_and_change_gpu(monkeypatch):
    tp_u, ts_u = pair("utils")
    tp_g, ts_g = pair("gpu")
    for utils, gpu in ((tp_u, tp_g), (ts_u, ts_g)):
        monkeypatch.setenv("TRAINSTACK_TEST_VAR", "old")
        with utils.change_env("TRAINSTACK_TEST_VAR", "new"):
            assert os.environ["TRAINSTACK_TEST_VAR"] == "new"
        assert os.environ["TRAINSTACK_TEST_VAR"] == "old"
        with utils.change_env("TRAINSTACK_TEST_VAR", None):
            assert "TRAINSTACK_TEST_VAR" not in os.environ
        monkeypatch.delenv("TRAINSTACK_TEST_VAR")
        with utils.change_env("TRAINSTACK_TEST_VAR", "x"):
            assert os.environ["TRAINSTACK_TEST_VAR"] == "x"
        assert "TRAINSTACK_TEST_VAR" not in os.environ
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
        for val, expected in [(-1, ""), (2, "2"), ("1,3", "1,3")]:
            with gpu.change_gpu(val):
                assert os.environ["CUDA_VISIBLE_DEVICES"] == expected
            assert os.environ["CUDA_VISIBLE_DEVICES"] == "0,1"


def test_execute_only_once_is_per_line():
    tp, ts = pair("utils")
    for mod in (tp, ts):
        results = [mod.execute_only_once() for _ in range(3)]
        other = mod.execute_only_once()
        assert results == [True, False, False] and other is True


def test_get_tqdm_uses_tensorpacks_options(monkeypatch):
    tp, ts = pair("utils")
    monkeypatch.setenv("TENSORPACK_PROGRESS_REFRESH", "2.5")
    assert ts.get_tqdm_kwargs(leave=False) == tp.get_tqdm_kwargs(leave=False)
    import io

    bar = ts.get_tqdm(total=3, file=io.StringIO())
    assert bar.mininterval == 2.5 and bar.total == 3
    bar.close()


def test_timer_and_timed_operation(logs, monkeypatch):
    tp, ts = pair("timer")
    clock = iter(np.arange(0, 100, 0.5))
    for mod in (tp, ts):
        monkeypatch.setattr(mod, "timer", lambda: float(next(clock)))
    for mod in (tp, ts):
        t = mod.Timer()          # starts at s
        t.pause()                # s + 0.5
        assert t.is_paused()
        t.resume()               # s + 1.0: 0.5 paused
        assert not t.is_paused()
        assert t.seconds() == 1.0   # at s + 1.5
        with mod.timed_operation("good stuff", log_start=True):
            pass
        speed = mod.IterSpeedCounter(2, "it")
        for _ in range(4):
            speed()
    assert logs[0] == logs[1]
    assert logs[1][0] == ("info", "Start good stuff ...")
    assert logs[1][1] == ("info", "Good stuff finished, time:0.5000 sec.")
    assert logs[1][2:] == [("info", "it: 0.50 sec, 2 times, 0.25 sec/time"), ("info", "it: 1.00 sec, 4 times, 0.25 sec/time")]


def test_fs(tmp_path, monkeypatch, logs):
    tp, ts = pair("fs")
    for mod, sub in ((tp, "a/b/c"), (ts, "x/y/z")):
        mod.mkdir_p(str(tmp_path / sub))
        mod.mkdir_p(str(tmp_path / sub))  # exists: nothing
        assert (tmp_path / sub).is_dir()
    (tmp_path / "a" / "f1").write_text("1")
    (tmp_path / "a/b/c" / "f2").write_text("2")
    assert list(ts.recursive_walk(str(tmp_path / "a"))) == list(tp.recursive_walk(str(tmp_path / "a")))
    for path in ["a//b/../c", "s3://bucket//x/../y", "./d/"]:
        assert ts.normpath(path) == tp.normpath(path)
    monkeypatch.setenv("TENSORPACK_DATASET", str(tmp_path))
    assert ts.get_dataset_path("mnist", "x") == tp.get_dataset_path("mnist", "x") == str(tmp_path / "mnist" / "x")
    source = tmp_path / "remote.bin"
    source.write_bytes(b"0123456789")
    url = source.as_uri()
    paths = [mod.download(url, str(tmp_path / out), expect_size=10) for mod, out in ((tp, "tp"), (ts, "ts"))]
    assert [open(p, "rb").read() for p in paths] == [b"0123456789"] * 2
    assert [os.path.basename(p) for p in paths] == ["remote.bin"] * 2
    del logs[0][:], logs[1][:]
    again = [mod.download(url, str(tmp_path / out), expect_size=10) for mod, out in ((tp, "tp"), (ts, "ts"))]
    assert again == paths and logs[0] == logs[1] == [("info", "File remote.bin exists! Skip download.")]


def test_develop(logs):
    tp, ts = pair("develop")
    for mod in (tp, ts):
        dummy = mod.create_dummy_class("Thing", "somelib")
        with pytest.raises(ImportError, match="Cannot import 'somelib', therefore 'Thing' is not available"):
            dummy()
        with pytest.raises(AttributeError, match="Cannot import 'somelib'"):
            dummy.anything  # noqa: B018
        with pytest.raises(ImportError, match="Cannot import 'a,b', therefore 'f' is not available"):
            mod.create_dummy_func("f", ["a", "b"])()
        mod.log_deprecated("old_f", "Use new_f.", "2020-10-2")
        mod.log_deprecated("old_g", "Use new_g.")
        mod.log_deprecated(text="Something changed.", eos="2020-1-1")
        for _ in range(3):
            mod.log_deprecated("h", max_num_warnings=2)
        f = mod.HIDE_DOC(lambda: 1)
        assert f.__HIDE_SPHINX_DOC__ is True
        namespace: dict = {}
        lazy = mod.LazyLoader("json_mod", namespace, "json")
        assert lazy.dumps([1]) == "[1]" and namespace["json_mod"].__name__ == "json"
    assert logs[0] == logs[1]
    assert logs[1][:3] == [("warn", "[Deprecated] old_f will be deprecated after 02 Oct. Use new_f."),
                           ("warn", "[Deprecated] old_g was deprecated. Use new_g."),
                           ("warn", "[Deprecated] Something changed. Legacy period ends after 01 Jan")]
    assert len(logs[1]) == 5
    wrapped = ts.deprecated("Use g.")(lambda x: x + 1)
    del logs[1][:]
    assert wrapped(1) == 2 and logs[1][0][1].startswith("[Deprecated] <lambda> [") and "Use g." in logs[1][0][1]


def test_serialize_is_tensorpacks_pickle_both_ways(monkeypatch):
    tp, ts = pair("serialize")
    value = {"a": np.arange(5), "b": [1, "x", (2.5, None)]}
    assert ts.dumps(value) == tp.dumps(value)
    back = ts.loads(tp.dumps(value))
    np.testing.assert_array_equal(back["a"], value["a"]) and back["b"] == value["b"]
    assert pickle.loads(ts.dumps(3)) == 3
    cs_tp, cs_ts = pair("compatible_serialize")
    assert cs_ts.loads(cs_tp.dumps([1, 2])) == [1, 2]
    monkeypatch.setenv("TENSORPACK_SERIALIZE", "msgpack")
    with pytest.raises(ValueError, match=r"dumps\(\): TENSORPACK_SERIALIZE='msgpack' is not supported"):
        ts.dumps(1)


def test_palette_and_naming():
    tp, ts = pair("palette")
    np.testing.assert_array_equal(ts.PALETTE_RGB, tp.PALETTE_RGB)
    assert ts.PALETTE_RGB.dtype == tp.PALETTE_RGB.dtype and ts.PALETTE_RGB.shape == (79, 3)
    tp, ts = pair("naming")
    assert (ts.GLOBAL_STEP_INCR_OP_NAME, ts.MOVING_SUMMARY_OPS_KEY) == (tp.GLOBAL_STEP_INCR_OP_NAME,
                                                                       tp.MOVING_SUMMARY_OPS_KEY)


def test_stoppable_and_loop_threads():
    tp, ts = pair("concurrency")
    import queue

    for mod in (tp, ts):
        th = mod.StoppableThread()
        assert not th.stopped()
        q: queue.Queue = queue.Queue(maxsize=1)
        th.queue_put_stoppable(q, 1)
        assert th.queue_get_stoppable(q) == 1
        th.stop()
        assert th.stopped()
        th.queue_put_stoppable(q, 2)  # gives up at once once stopped
        assert th.queue_get_stoppable(q) is None and q.empty()
        count = [0]
        lt = mod.LoopThread(lambda _c=count: (_c.__setitem__(0, _c[0] + 1), time.sleep(0.001)))
        assert lt.daemon
        lt.start()
        while count[0] < 3:
            time.sleep(0.01)
        lt.pause()
        paused_at = count[0]
        time.sleep(0.05)
        assert count[0] <= paused_at + 1
        lt.resume()
        lt.stop()
        lt.join(5)
        assert not lt.is_alive()
        with pytest.raises(AssertionError):
            mod.LoopThread(lambda: None, pausable=False).pause()


def _report_sigint_and_sleep(q):
    import signal

    q.put(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)
    time.sleep(60)


def test_processes_start_with_sigint_masked_and_are_terminated_at_exit(monkeypatch):
    import atexit

    _, ts = pair("concurrency")
    registered = []
    monkeypatch.setattr(atexit, "register", lambda f, *a: registered.append((f, a)))
    import signal

    before = signal.getsignal(signal.SIGINT)
    q = mp.Queue()
    proc = mp.Process(target=_report_sigint_and_sleep, args=(q,))
    ts.start_proc_mask_signal(proc)
    assert q.get(timeout=30) is True  # the child ignores Ctrl-C
    ts.ensure_proc_terminate([proc])
    assert proc.is_alive() and len(registered) == 1
    assert signal.getsignal(signal.SIGINT) is before  # restored in this process
    fn, args = registered[0]
    fn(*args)  # what atexit runs
    assert not proc.is_alive()
    with pytest.raises(AssertionError, match="multiprocessing.Process"):
        ts.ensure_proc_terminate(threading.Thread())


def test_enable_call_trace_prints_calls_as_tensorpacks(capsys):
    import sys

    tp, ts = pair("debug")

    def callee():
        return 1

    outputs = []
    for mod in (tp, ts):
        mod.enable_call_trace()
        try:
            callee()
        finally:
            sys.settrace(None)
        outputs.append([line for line in capsys.readouterr().out.splitlines() if "`callee`" in line])
    assert outputs[0] and [o.split(" on line")[0] for o in outputs[0]] == [o.split(" on line")[0] for o in outputs[1]]


def test_share_session_thread_runs_in_the_starters_default_session_as_tensorpacks():
    import tensorflow as tf

    tp, ts = pair("concurrency")
    graph = tf.Graph()
    sess = tf.compat.v1.Session(graph=graph)
    for module in (tp, ts):
        seen = []
        with graph.as_default(), sess.as_default():
            t = module.ShareSessionThread(threading.Thread(target=lambda: seen.append(
                tf.compat.v1.get_default_session()), name="worker", daemon=True))
            t.start()
            t.join()
        assert seen == [sess] and t.name == "worker" and t.daemon

    class Sub(ts.ShareSessionThread):  # tensorpack's subclasses (PredictorWorkerThread) use default_sess()
        def run(self):
            with self.default_sess() as s:
                self.got = (s, tf.compat.v1.get_default_session())

    sub = Sub()
    with graph.as_default(), sess.as_default():
        sub.start()
    sub.join()
    assert sub.got == (sess, sess)
    seen = []
    plain = ts.ShareSessionThread(threading.Thread(target=lambda: seen.append(tf.compat.v1.get_default_session())))
    plain.start()  # no default session: it runs without one (tensorpack's failed on None.as_default())
    plain.join()
    assert seen == [None]
    sess.close()
