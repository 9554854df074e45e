"""The exact sequence of hook calls, against the seeds' loop."""
import pytest

from trainstack.loop import Callback, Trainer

ALL_HOOKS = ("before_train", "before_epoch", "before_run", "after_run", "trigger_step",
             "after_epoch", "trigger_epoch", "trigger", "after_train")


class Recorder(Callback):
    """Records (hook, epoch_num, local_step, global_step) for every hook."""

    def __init__(self, log):
        self.log = log

    def _setup_graph(self):
        self.log.append(("setup_graph",))


for _hook in ALL_HOOKS:
    def _make(hook):
        def method(self, *args):
            self.log.append((hook, self.epoch_num, self.local_step, self.global_step))
            if hook == "trigger_epoch":
                self.trigger()  # as Callback._trigger_epoch does
        return method
    setattr(Recorder, "_" + _hook, _make(_hook))


def seeds_loop(starting_epoch, max_epoch, steps_per_epoch):
    """The seeds' double loop, written out: what the hooks must see.

    tensorpack runs epochs starting_epoch..max_epoch inclusive; the hooked run
    increments global_step before after_run; trigger_epoch calls trigger.
    """
    log = [("setup_graph",), ("before_train", starting_epoch - 1, -1, 0)]
    global_step = 0
    for epoch_num in range(starting_epoch, max_epoch + 1):
        log.append(("before_epoch", epoch_num, -1, global_step))
        for local_step in range(steps_per_epoch):
            log.append(("before_run", epoch_num, local_step, global_step))
            global_step += 1
            log.append(("after_run", epoch_num, local_step, global_step))
            log.append(("trigger_step", epoch_num, local_step, global_step))
        log.append(("after_epoch", epoch_num, steps_per_epoch - 1, global_step))
        log.append(("trigger_epoch", epoch_num, steps_per_epoch - 1, global_step))
        log.append(("trigger", epoch_num, steps_per_epoch - 1, global_step))
    log.append(("after_train", max_epoch, steps_per_epoch - 1, global_step))
    return log


@pytest.mark.parametrize("starting_epoch", [1, 3])
def test_hook_sequence_matches_seeds_loop(starting_epoch):
    log = []
    trainer = Trainer()
    steps = []
    trainer.train_op = lambda: steps.append(trainer.global_step)
    max_epoch = starting_epoch + 1  # two epochs
    trainer.train([Recorder(log)], [], steps_per_epoch=3, starting_epoch=starting_epoch,
                  max_epoch=max_epoch)
    assert log == seeds_loop(starting_epoch, max_epoch, 3)
    assert steps == [0, 1, 2, 3, 4, 5]
    assert (trainer.epoch_num, trainer.local_step, trainer.global_step) == (max_epoch, 2, 6)


def test_callbacks_called_in_registration_order():
    order = []

    class Named(Callback):
        def __init__(self, tag):
            self.tag = tag

        def _trigger_step(self):
            order.append(self.tag)

    trainer = Trainer()
    trainer.train_op = lambda: None
    trainer.register_callback(Named("input"))
    trainer.register_callback(Named("trainer"))
    trainer.train_with_defaults(callbacks=[Named("user")], extra_callbacks=[Named("extra")],
                                steps_per_epoch=1, max_epoch=1)
    assert order == ["input", "trainer", "user", "extra"]


def test_empty_epochs_still_run_epoch_hooks():
    log = []
    trainer = Trainer()
    trainer.train_op = lambda: pytest.fail("no step should run")
    trainer.train([Recorder(log)], [], steps_per_epoch=0, max_epoch=2)
    assert [e[0] for e in log].count("trigger_epoch") == 2
    assert trainer.global_step == 0


def test_unused_hooks_are_never_called():
    calls = []

    class EpochOnly(Callback):
        def _trigger_epoch(self):
            calls.append("trigger_epoch")

    cb = EpochOnly()
    for hook in ("before_run", "after_run", "trigger_step", "before_epoch", "after_epoch"):
        setattr(cb, hook, lambda *a, _h=hook: calls.append(_h))
    trainer = Trainer()
    trainer.train_op = lambda: None
    trainer.train([cb], [], steps_per_epoch=5, max_epoch=2)
    assert calls == ["trigger_epoch", "trigger_epoch"]
    assert cb not in trainer.callbacks.active("trigger_step")
