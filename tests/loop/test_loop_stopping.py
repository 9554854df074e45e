"""StopTraining, Ctrl-C and errors: after_train always runs for every callback."""
import logging

import pytest

from trainstack.loop import Callback, StopTraining, Trainer


class Finalized(Callback):
    def __init__(self, log, tag="cb"):
        self.log, self.tag = log, tag

    def _after_train(self):
        self.log.append(self.tag)


class RaiseIn(Callback):
    """Raises ``exc`` from ``hook`` when ``when(self)`` is true."""

    def __init__(self, hook, exc, when=lambda cb: True):
        self.hook, self.exc, self.when = hook, exc, when

    def _raise_if(self, hook):
        if hook == self.hook and self.when(self):
            raise self.exc

    def _before_epoch(self):
        self._raise_if("before_epoch")

    def _trigger_step(self):
        self._raise_if("trigger_step")


def counting_trainer():
    trainer = Trainer()
    trainer.train_op = lambda: None
    return trainer


def test_stop_training_from_step_ends_cleanly():
    log = []
    trainer = Trainer()

    def step():
        if trainer.global_step == 4:
            raise StopTraining("enough")

    trainer.train_op = step
    trainer.train([Finalized(log, "a"), Finalized(log, "b")], [], steps_per_epoch=3, max_epoch=10)
    assert log == ["a", "b"]
    # the fifth step raised: 4 finished hooked runs, stopped in epoch 2 at local step 1
    assert (trainer.global_step, trainer.epoch_num, trainer.local_step) == (4, 2, 1)


def test_stop_training_from_trigger_step():
    log = []
    trainer = counting_trainer()
    stopper = RaiseIn("trigger_step", StopTraining(), when=lambda cb: cb.global_step == 5)
    trainer.train([stopper, Finalized(log)], [], steps_per_epoch=3, max_epoch=10)
    assert log == ["cb"]
    assert trainer.global_step == 5


def test_stop_training_from_before_epoch():
    log = []
    trainer = counting_trainer()
    stopper = RaiseIn("before_epoch", StopTraining(), when=lambda cb: cb.epoch_num == 3)
    trainer.train([stopper, Finalized(log)], [], steps_per_epoch=2, max_epoch=10)
    assert log == ["cb"]
    assert (trainer.epoch_num, trainer.global_step) == (3, 4)


def test_request_stop_from_after_run():
    class Stopper(Callback):
        def _after_run(self, ctx, values):
            if self.global_step == 2:
                ctx.request_stop()

    trainer = counting_trainer()
    trainer.train([Stopper()], [], steps_per_epoch=5, max_epoch=3)
    assert trainer.global_step == 2


def test_keyboard_interrupt_runs_after_train_then_propagates():
    log = []
    trainer = Trainer()

    def step():
        raise KeyboardInterrupt

    trainer.train_op = step
    with pytest.raises(KeyboardInterrupt):
        trainer.train([Finalized(log, "a"), Finalized(log, "b")], [], steps_per_epoch=3, max_epoch=2)
    assert log == ["a", "b"]


def test_error_in_step_propagates_after_finalizing(caplog):
    log = []
    trainer = Trainer()
    trainer.train_op = lambda: 1 / 0
    with caplog.at_level(logging.ERROR, logger="trainstack"):
        with pytest.raises(ZeroDivisionError):
            trainer.train([Finalized(log)], [], steps_per_epoch=3, max_epoch=2)
    assert log == ["cb"]
    assert "Training failed at global_step=0" in caplog.text


class BrokenFinalizer(Callback):
    def _after_train(self):
        raise RuntimeError("cannot close")


def test_failing_after_train_does_not_skip_others_and_is_raised():
    log = []
    trainer = counting_trainer()
    with pytest.raises(RuntimeError, match="cannot close"):
        trainer.train([Finalized(log, "a"), BrokenFinalizer(), Finalized(log, "b")], [],
                      steps_per_epoch=2, max_epoch=1)
    assert log == ["a", "b"]
    assert trainer.global_step == 2  # training itself completed


def test_failing_after_train_does_not_mask_keyboard_interrupt(caplog):
    log = []
    trainer = Trainer()

    def step():
        raise KeyboardInterrupt

    trainer.train_op = step
    with caplog.at_level(logging.ERROR, logger="trainstack"):
        with pytest.raises(KeyboardInterrupt):
            trainer.train([BrokenFinalizer(), Finalized(log)], [], steps_per_epoch=2, max_epoch=1)
    assert log == ["cb"]
    assert "BrokenFinalizer failed in after_train" in caplog.text


def test_stop_exceptions_of_a_framework_end_training_cleanly():
    class OutOfData(Exception):
        pass

    class FrameworkTrainer(Trainer):
        stop_exceptions = (OutOfData,)

    log = []
    trainer = FrameworkTrainer()

    def step():
        if trainer.global_step == 3:
            raise OutOfData("input exhausted")

    trainer.train_op = step
    trainer.train([Finalized(log)], [], steps_per_epoch=10, max_epoch=1)
    assert log == ["cb"] and trainer.global_step == 3


def test_request_stop_with_a_reason_lets_the_epoch_finish(caplog):
    log = []

    class StopAfterEpoch(Callback):
        def _trigger_epoch(self):
            if self.epoch_num == 2:
                self.trainer.request_stop("plateau reached")

    class After(Callback):
        def _trigger_epoch(self):
            log.append(self.epoch_num)

    trainer = counting_trainer()
    with caplog.at_level(logging.INFO, logger="trainstack"):
        trainer.train([StopAfterEpoch(), After()], [], steps_per_epoch=2, max_epoch=5)
    assert log == [1, 2] and trainer.epoch_num == 2
    assert "plateau reached" in caplog.text
