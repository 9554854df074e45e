"""tensorpack names of the loop layer: register_callback with a list, hooked_sess, memoized."""
from __future__ import annotations

import pytest

from trainstack.loop import Callback, Trainer, memoized, memoized_method


class Counter(Callback):
    def __init__(self):
        self.steps = 0

    def _trigger_step(self):
        self.steps += 1


def test_register_callback_accepts_a_list_and_a_single_callback():
    trainer = Trainer()
    a, b, c = Counter(), Counter(), Counter()
    assert trainer.register_callback([a, b]) == [True, True]
    assert trainer.register_callback(c) is True
    trainer.train_op = lambda: None
    trainer.train([], [], steps_per_epoch=3, max_epoch=1)
    assert (a.steps, b.steps, c.steps) == (3, 3, 3)


def test_a_callback_registered_twice_runs_once():
    trainer = Trainer()
    a = Counter()
    trainer.register_callback(a)
    trainer.register_callback([a])
    trainer.train_op = lambda: None
    trainer.train([], [], steps_per_epoch=2, max_epoch=1)
    assert a.steps == 2


def test_register_callback_still_rejects_non_callbacks():
    with pytest.raises(TypeError, match="expects a Callback"):
        Trainer().register_callback([Counter(), "not a callback"])


def test_hooked_sess_runs_step_functions_with_hooks():
    class Fetch(Callback):
        got = []

        def _before_run(self, ctx):
            return ["loss"]

        def _after_run(self, ctx, values):
            self.got.append(values.results[0])

    trainer = Trainer()
    fetch = Fetch()
    trainer.setup_callbacks([fetch], [])
    out = trainer.hooked_sess.run(lambda: {"loss": 2.5})
    assert out == {"loss": 2.5} and fetch.got == [2.5] and trainer.global_step == 1
    # sess.run: no hooks, no step counted
    assert trainer.sess.run([lambda: {"loss": 1.0}, lambda: {"loss": 3.0}]) == [{"loss": 1.0}, {"loss": 3.0}]
    assert fetch.got == [2.5] and trainer.global_step == 1


def test_hooked_sess_refuses_feed_dict_and_tensors_clearly():
    trainer = Trainer()
    with pytest.raises(TypeError, match=r"no placeholders.*hooked_run\(fn, \*args\)"):
        trainer.hooked_sess.run(lambda: None, feed_dict={"x": 1})
    with pytest.raises(TypeError, match="runs a step function"):
        trainer.sess.run("train_op:0")


def test_memoized_caches_by_arguments():
    calls = []

    @memoized
    def square(x):
        calls.append(x)
        return x * x

    assert [square(3), square(3), square(4)] == [9, 9, 16]
    assert calls == [3, 4]
    square.cache_clear()
    square(3)
    assert calls == [3, 4, 3]


def test_memoized_method_caches_per_instance():
    class Model:
        def __init__(self, k):
            self.k, self.calls = k, 0

        __hash__ = None  # unhashable instances still work

        @memoized_method
        def scaled(self, x, *, twice=False):
            self.calls += 1
            return self.k * x * (2 if twice else 1)

    a, b = Model(2), Model(10)
    assert [a.scaled(1), a.scaled(1), a.scaled(1, twice=True), b.scaled(1)] == [2, 2, 4, 10]
    assert (a.calls, b.calls) == (2, 1)
