"""StepOptions: one frozen set of step options, taken by every trainer one way, checked once."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from trainstack.inputs import QueueInput
from trainstack.loop import ArgumentError, Callback
from trainstack.towers import (
    AsyncMultiGPUTrainer,
    NoOpTrainer,
    SimpleTrainer,
    StepOptions,
    SyncMultiGPUTrainerParameterServer,
    SyncMultiGPUTrainerReplicated,
)

TRAINERS = {
    "SimpleTrainer": lambda **kw: SimpleTrainer(**kw),
    "NoOpTrainer": lambda **kw: NoOpTrainer(**kw),
    "SyncMultiGPUTrainerReplicated": lambda **kw: SyncMultiGPUTrainerReplicated(["/cpu:0"], **kw),
    "SyncMultiGPUTrainerParameterServer": lambda **kw: SyncMultiGPUTrainerParameterServer(["/cpu:0"], **kw),
    "AsyncMultiGPUTrainer": lambda **kw: AsyncMultiGPUTrainer(["/cpu:0"], **kw),
}


def test_step_options_are_frozen_and_checked_when_made():
    options = StepOptions(xla_compile=True, steps_per_run=4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.xla_compile = False
    assert options.changed() == {"xla_compile": True, "steps_per_run": 4}
    assert options.replace(steps_per_run=2).steps_per_run == 2 and options.steps_per_run == 4
    with pytest.raises(ArgumentError, match=r"StepOptions\(steps_per_run=\.\.\.\) must be a positive integer, got 0"):
        StepOptions(steps_per_run=0)
    with pytest.raises(ArgumentError, match=r"StepOptions\(mixed_precision=\.\.\.\) must be True or False, got 'no'"):
        StepOptions(mixed_precision="no")
    with pytest.raises(ArgumentError, match=r"unknown step option\(s\) \['xla'\]"):
        options.replace(xla=True)


@pytest.mark.parametrize("name", TRAINERS)
def test_every_trainer_takes_the_options_one_way_and_keywords_on_top(name):
    make = TRAINERS[name]
    by_object = make(options=StepOptions(record_nonfinite="loss", gpu_prefetch=False))
    by_keyword = make(record_nonfinite="loss", gpu_prefetch=False)
    assert by_object.options == by_keyword.options == StepOptions(record_nonfinite="loss", gpu_prefetch=False)
    assert (by_object.record_nonfinite, by_object.gpu_prefetch) == ("loss", False)
    mixed = make(options=StepOptions(gpu_prefetch=False), record_nonfinite=False)  # a keyword adds to options=
    assert mixed.options == StepOptions(gpu_prefetch=False, record_nonfinite=False)


@pytest.mark.parametrize("name", TRAINERS)
def test_unknown_and_ill_typed_options_name_the_option_and_the_valid_ones(name):
    make = TRAINERS[name]
    with pytest.raises(TypeError, match=rf"{name}\(\): unknown step option\(s\) \['xla'\]; the step options are "
                                        r"\['steps_per_run', 'xla_compile', .*'gpu_prefetch'\]"):
        make(xla=True)
    with pytest.raises(ValueError, match=rf"{name}\(xla_compile=\.\.\.\) must be True or False, got 'no'"):
        make(xla_compile="no")  # bool("no") is True: refused, not read as a flag
    with pytest.raises(ValueError, match=rf"{name}\(gradient_accumulation_steps=\.\.\.\) must be a positive integer"):
        make(gradient_accumulation_steps=2.0)
    with pytest.raises(TypeError, match=rf"{name}\(options=\.\.\.\) must be a StepOptions, got \{{'xla_compile'"):
        make(options={"xla_compile": True})


@pytest.mark.parametrize("name", TRAINERS)
def test_options_cannot_be_set_after_construction(name):
    trainer = TRAINERS[name]()
    with pytest.raises(AttributeError, match=rf"{name}\.steps_per_run is a step option, fixed when the trainer is "
                                             rf"made .*pass {name}\(steps_per_run=4\) or {name}\(options=StepOptions"):
        trainer.steps_per_run = 4
    assert trainer.steps_per_run == 1 and trainer.options == StepOptions()


def test_a_subclass_cannot_set_an_option_as_a_class_attribute():
    with pytest.raises(TypeError, match=r"XLATrainer sets the step option\(s\) \['xla_compile'\] as class "
                                        r"attributes.*options=StepOptions"):
        class XLATrainer(SimpleTrainer):
            xla_compile = True


def test_boolean_arguments_of_the_multi_gpu_trainers_follow_the_same_rule():
    with pytest.raises(ValueError, match=r"SyncMultiGPUTrainerReplicated\(average=\.\.\.\) must be True or False"):
        SyncMultiGPUTrainerReplicated(["/cpu:0"], average="no")
    with pytest.raises(ValueError, match=r"AsyncMultiGPUTrainer\(scale_gradient=\.\.\.\) must be True or False"):
        AsyncMultiGPUTrainer(["/cpu:0"], scale_gradient=1)


class _CountHooks(Callback):
    def __init__(self):
        self.step_hooks = 0

    def _trigger_step(self):
        self.step_hooks += 1


def test_options_given_as_an_object_change_the_step(model, dataflow, setup):
    """steps_per_run=4 through options=: 8 steps are 2 calls (per-step hooks run once a call)."""
    hooks = _CountHooks()
    trainer = setup(SimpleTrainer(options=StepOptions(steps_per_run=4)), model, QueueInput(dataflow))
    before = [np.array(v) for v in model.fc.get_weights()]
    trainer.train([hooks], [], steps_per_epoch=8, max_epoch=1)
    assert trainer.global_step == 8 and hooks.step_hooks == 2
    assert any(not np.allclose(a, b) for a, b in zip(before, model.fc.get_weights()))
