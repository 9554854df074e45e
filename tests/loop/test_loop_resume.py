"""Resume: a loop state saved mid-run continues exactly where it stopped."""
import json

import pytest

from trainstack.loop import Callback, StopTraining, Trainer, TrainLoop


class Trace(Callback):
    """Records the counters at every step and epoch end."""

    def __init__(self, log):
        self.log = log

    def _trigger_step(self):
        self.log.append(("step", self.epoch_num, self.local_step, self.global_step))

    def _trigger_epoch(self):
        self.log.append(("epoch", self.epoch_num, self.global_step))


class SaveAndStop(Callback):
    """Saves the loop state (as JSON, as a checkpoint would) and stops, at a chosen point."""

    def __init__(self, hook, when):
        self.hook, self.when, self.saved = hook, when, None

    def _check(self, hook):
        if hook == self.hook and self.when(self):
            self.saved = json.dumps(self.trainer.loop.state_dict())
            raise StopTraining("simulated crash")

    def _trigger_step(self):
        self._check("trigger_step")

    def _trigger_epoch(self):
        self._check("trigger_epoch")


def run(callbacks, loop_state=None, **kw):
    trainer = Trainer()
    trainer.train_op = lambda: None
    if loop_state is not None:
        trainer.loop.load_state_dict(json.loads(loop_state))
    trainer.train(callbacks, [], **kw)
    return trainer


@pytest.mark.parametrize("hook, stop_at", [
    ("trigger_step", 5),   # mid-epoch
    ("trigger_step", 8),   # last step of epoch 2, before its epoch hooks
    ("trigger_epoch", 4),  # after epoch 1 ended
])
def test_resume_continues_with_the_same_counters(hook, stop_at):
    kwargs = dict(steps_per_epoch=4, starting_epoch=1, max_epoch=3)
    full = []
    run([Trace(full)], **kwargs)

    first = []
    saver = SaveAndStop(hook, lambda cb: cb.global_step == stop_at)
    run([Trace(first), saver], **kwargs)
    resumed = []
    trainer = run([Trace(resumed)], loop_state=saver.saved, **{**kwargs, "starting_epoch": None})

    # the first run got to the save point; the resumed one does exactly the rest
    assert first == full[:len(first)] and first[-1][-1] == stop_at
    assert resumed == full[len(first):]
    assert trainer.global_step == 12 and trainer.epoch_num == 3


def test_resume_can_extend_max_epoch():
    trainer = run([], steps_per_epoch=2, max_epoch=2)
    log = []
    resumed = run([Trace(log)], loop_state=json.dumps(trainer.loop.state_dict()),
                  steps_per_epoch=2, max_epoch=3)
    assert log == [("step", 3, 0, 5), ("step", 3, 1, 6), ("epoch", 3, 6)]
    assert resumed.epoch_num == 3


def test_resume_with_conflicting_starting_epoch_is_an_error():
    trainer = run([], steps_per_epoch=1, starting_epoch=1, max_epoch=1)
    with pytest.raises(ValueError, match="started at epoch 1"):
        run([], loop_state=json.dumps(trainer.loop.state_dict()), steps_per_epoch=1,
            starting_epoch=5, max_epoch=6)


def test_load_state_dict_validates():
    loop = TrainLoop()
    with pytest.raises(KeyError, match="missing"):
        loop.load_state_dict({"epoch_num": 1})
    state = TrainLoop().state_dict()
    state["global_step"] = "3"
    with pytest.raises(TypeError, match="'global_step' must be int"):
        loop.load_state_dict(state)
