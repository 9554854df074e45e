"""ProxyCallback forwards every hook; CallbackFactory builds a callback from functions."""
from __future__ import annotations

import pytest

from trainstack.callbacks import CallbackFactory, ProxyCallback
from trainstack.loop import Callback, Trainer


class Recorder(Callback):
    """Records every hook call with the counters, and the loss it fetched."""

    def __init__(self):
        self.events = []
        self.losses = []

    def _setup_graph(self):
        self.events.append(("setup_graph",))

    def _before_train(self):
        self.events.append(("before_train", self.global_step))

    def _before_epoch(self):
        self.events.append(("before_epoch", self.epoch_num))

    def _before_run(self, ctx):
        self.events.append(("before_run", self.global_step))
        return "loss"

    def _after_run(self, ctx, values):
        self.events.append(("after_run", self.global_step))
        self.losses.append(float(values.results))

    def _trigger_step(self):
        self.events.append(("trigger_step", self.global_step))

    def _after_epoch(self):
        self.events.append(("after_epoch", self.epoch_num))

    def _trigger(self):
        self.events.append(("trigger", self.epoch_num))

    def _after_train(self):
        self.events.append(("after_train", self.global_step))


class OnlyTrigger(Callback):
    def __init__(self):
        self.calls = 0

    def _trigger(self):
        self.calls += 1


def test_proxy_forwards_every_hook_like_the_callback_itself(linear_trainer):
    trainer = linear_trainer()
    direct, inner = Recorder(), Recorder()
    proxy = ProxyCallback(inner)
    trainer.train([direct, proxy], [], steps_per_epoch=3, max_epoch=2)

    assert inner.events == direct.events
    assert inner.losses == direct.losses and len(inner.losses) == 6
    assert inner.events.count(("trigger", 1)) == 1 and ("trigger", 2) in inner.events
    assert inner.trainer is trainer and proxy.trainer is trainer


def test_proxy_is_inactive_on_hooks_the_wrapped_callback_does_not_use():
    trainer = Trainer()
    trainer.train_op = lambda: {"loss": 1.0}
    inner = OnlyTrigger()
    proxy = ProxyCallback(inner)
    trainer.train([proxy], [], steps_per_epoch=4, max_epoch=3)

    group = trainer.callbacks
    assert proxy in group.active("trigger_epoch")
    for hook in ("before_train", "before_epoch", "before_run", "after_run", "trigger_step",
                 "after_epoch", "after_train"):
        assert proxy not in group.active(hook), hook
    assert inner.calls == 3


def test_proxy_copies_chief_only_and_names_itself():
    inner = OnlyTrigger().set_chief_only(False)
    proxy = ProxyCallback(inner)
    assert proxy.chief_only is False
    assert ProxyCallback(OnlyTrigger()).chief_only is True
    assert str(proxy) == "Proxy-OnlyTrigger"
    assert str(ProxyCallback(proxy)) == "Proxy-Proxy-OnlyTrigger"


def test_proxy_of_a_non_callback_is_a_clear_error():
    with pytest.raises(TypeError, match="wraps a Callback"):
        ProxyCallback(lambda: None)


def test_callback_factory_calls_the_given_functions_with_itself(linear_trainer):
    calls = []
    factory = CallbackFactory(
        setup_graph=lambda cb: calls.append(("setup_graph", cb)),
        before_train=lambda cb: calls.append(("before_train", cb.global_step)),
        trigger=lambda cb: calls.append(("trigger", cb.epoch_num, cb.global_step)),
        after_train=lambda cb: calls.append(("after_train", cb.global_step)))
    trainer = linear_trainer()
    trainer.train([factory], [], steps_per_epoch=2, max_epoch=2)

    assert calls == [("setup_graph", factory), ("before_train", 0), ("trigger", 1, 2),
                     ("trigger", 2, 4), ("after_train", 4)]


def test_callback_factory_is_active_only_on_the_given_functions():
    trainer = Trainer()
    trainer.train_op = lambda: None
    triggers = []
    factory = CallbackFactory(trigger=lambda cb: triggers.append(cb.epoch_num))
    trainer.train([factory], [], steps_per_epoch=1, max_epoch=2)

    group = trainer.callbacks
    assert factory in group.active("trigger_epoch")
    for hook in ("before_train", "before_run", "trigger_step", "after_train"):
        assert factory not in group.active(hook), hook
    assert triggers == [1, 2]
    assert "trigger=" in factory.name and "before_train" not in factory.name


def test_callback_factory_rejects_what_is_not_a_function():
    with pytest.raises(TypeError, match=r"CallbackFactory\(trigger=...\)"):
        CallbackFactory(trigger="save")
