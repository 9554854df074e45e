"""Registration, the hooked run, monitors and errors of the base Trainer."""
import logging
import time

import pytest

from trainstack.loop import Callback, MonitorBase, RunArgs, Trainer


class Noop(Callback):
    pass


class Scalars(MonitorBase):
    def __init__(self):
        self.seen = []

    def process_scalar(self, name, value):
        self.seen.append((name, value))


# -- registration ----------------------------------------------------------------
def test_chief_only_callbacks_dropped_on_non_chief():
    trainer = Trainer()
    trainer.is_chief = False
    chief_cb, everywhere_cb = Noop(), Noop().set_chief_only(False)
    assert trainer.register_callback(chief_cb) is False
    assert trainer.register_callback(everywhere_cb) is True
    monitor = Scalars()  # monitors run on every process
    trainer.setup_callbacks([], [monitor])
    assert trainer.callbacks.cbs == [everywhere_cb, monitor]
    assert trainer.monitors.monitors == [monitor]


def test_chief_keeps_chief_only_callbacks():
    trainer = Trainer()
    assert trainer.register_callback(Noop()) is True


def test_register_after_setup_is_an_error():
    trainer = Trainer()
    trainer.setup_callbacks([], [])
    with pytest.raises(RuntimeError, match="already set up"):
        trainer.register_callback(Noop())


def test_setup_callbacks_validates_its_arguments():
    with pytest.raises(TypeError, match="not a Callback|expects a Callback"):
        Trainer().setup_callbacks([object()], [])
    with pytest.raises(TypeError, match="pass it in monitors="):
        Trainer().setup_callbacks([Scalars()], [])
    with pytest.raises(TypeError, match="MonitorBase"):
        Trainer().setup_callbacks([], [Noop()])
    with pytest.raises(TypeError, match="must be a list"):
        Trainer().setup_callbacks(Noop(), [])


def test_main_loop_validates_counts():
    trainer = Trainer()
    trainer.train_op = lambda: None
    with pytest.raises(ValueError, match=r"TrainLoop.configure\(steps_per_epoch=...\) must be a non-negative "
                                         r"integer, got -1"):
        trainer.train([], [], steps_per_epoch=-1)
    trainer = Trainer()
    with pytest.raises(ValueError, match="max_epoch"):
        trainer.train([], [], steps_per_epoch=1, max_epoch=2.5)


def test_run_step_without_train_op_says_what_to_do():
    trainer = Trainer()
    with pytest.raises(NotImplementedError, match="set trainer.train_op.*override run_step"):
        trainer.train([], [], steps_per_epoch=1, max_epoch=1)


def test_initialize_rejects_unknown_arguments():
    trainer = Trainer()
    trainer.setup_callbacks([], [])
    with pytest.raises(TypeError, match="session_init"):
        trainer.initialize(session_init=object())


# -- the hooked run ------------------------------------------------------------------
class Spy(Callback):
    def __init__(self, request=None):
        self.request = request
        self.before, self.after = 0, []

    def _before_run(self, ctx):
        self.before += 1
        return self.request

    def _after_run(self, ctx, values):
        self.after.append(values.results)


def test_only_the_hooked_run_triggers_run_hooks():
    trainer = Trainer()
    spy = Spy()
    trainer.setup_callbacks([spy], [])
    assert trainer.run(lambda x: x + 1, 1) == 2
    assert (spy.before, spy.after, trainer.global_step) == (0, [], 0)
    assert trainer.hooked_run(lambda x: x * 3, 2) == 6
    assert (spy.before, spy.after, trainer.global_step) == (1, [None], 1)


def test_fetches_and_feeds_from_two_callbacks():
    calls = []

    def step(scale=1.0, bias=0.0):
        calls.append((scale, bias))
        return {"loss": 2.0 * scale + bias, "acc": 0.5, "unused": -1}

    lists = Spy(["loss", "acc"])
    feeds_and_dict = Spy(RunArgs(fetches={"l": "loss"}, feeds={"scale": 10.0}))
    single = Spy(RunArgs(fetches="acc", feeds={"bias": 1.0}))
    trainer = Trainer()
    trainer.setup_callbacks([lists, feeds_and_dict, single], [])
    out = trainer.hooked_run(step)
    assert calls == [(10.0, 1.0)]
    assert out["loss"] == 21.0
    assert lists.after == [[21.0, 0.5]]
    assert feeds_and_dict.after == [{"l": 21.0}]
    assert single.after == [0.5]


def test_two_callbacks_feeding_the_same_name_is_an_error():
    trainer = Trainer()
    trainer.setup_callbacks([Spy(RunArgs(feeds={"x": 1})), Spy(RunArgs(feeds={"x": 2}))], [])
    with pytest.raises(ValueError, match="both feed 'x'"):
        trainer.hooked_run(lambda x: x)


def test_fetching_a_missing_name_is_a_clear_error():
    trainer = Trainer()
    trainer.setup_callbacks([Spy(["nope"])], [])
    with pytest.raises(KeyError, match="no value named \\['nope'\\]"):
        trainer.hooked_run(lambda: {"loss": 1.0})
    with pytest.raises(TypeError, match="must return a mapping"):
        trainer.hooked_run(lambda: 1.0)


def test_fetchable_step_protocol():
    class Step:
        def __init__(self):
            self.seen = None

        def run_with_fetches(self, args, fetches, feeds):
            self.seen = (args, fetches, dict(feeds))
            return "out", {n: n.upper() for n in fetches}

    step = Step()
    spy = Spy(RunArgs(fetches=["a", "b"], feeds={"f": 1}))
    trainer = Trainer()
    trainer.setup_callbacks([spy], [])
    assert trainer.hooked_run(step, 7) == "out"
    assert step.seen == ((7,), ("a", "b"), {"f": 1})
    assert spy.after == [["A", "B"]]


# -- monitors and timing -------------------------------------------------------------
def test_monitor_hub_dispatches_and_keeps_history():
    class Item:  # what NumPy scalars and 0-d arrays look like
        def __init__(self, v):
            self.v = v

        def item(self):
            return self.v

    monitor = Scalars()
    trainer = Trainer()
    trainer.setup_callbacks([], [monitor])
    trainer.monitors.put_scalar("tower0/loss", Item(0.5))
    trainer.monitors.put_scalar("towerp1/loss", 0.25)
    trainer.monitors.put_scalar("acc", True)
    assert monitor.seen == [("loss", 0.5), ("loss", 0.25), ("acc", 1)]
    assert trainer.monitors.get_latest("loss") == 0.25
    assert trainer.monitors.get_history("loss") == [0.5, 0.25]
    assert trainer.monitors.get_history("missing") == []
    with pytest.raises(KeyError, match="known: \\['acc', 'loss'\\]"):
        trainer.monitors.get_latest("missing")
    with pytest.raises(TypeError, match="must be a number"):
        trainer.monitors.put_scalar("bad", "text")


def test_slow_callbacks_are_reported(caplog):
    class Slow(Callback):
        def _trigger_epoch(self):
            time.sleep(0.03)

    trainer = Trainer()
    trainer.slow_callback_threshold = 0.02
    trainer.train_op = lambda: None
    with caplog.at_level(logging.INFO, logger="trainstack"):
        trainer.train([Slow(), Noop()], [], steps_per_epoch=1, max_epoch=2)
    reports = [r.getMessage() for r in caplog.records if "Callbacks took" in r.getMessage()]
    assert len(reports) == 2 and all("Slow:" in r and "Noop" not in r for r in reports)
    assert "epoch 1" in reports[0] and "epoch 2" in reports[1]
