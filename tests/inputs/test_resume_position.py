"""Resuming an input (issue 15): when the trainer's loop state was loaded (a resumed run), the
input's own callbacks call InputSource.resume_at_step, and every input that can say its position
gives the batches an uninterrupted run would have given next, tower by tower; those that cannot
warn."""
from __future__ import annotations

import logging

import numpy as np
import pytest
import tensorflow as tf

from trainstack.dataflow import DataFromList, fix_rng_seed
from trainstack.inputs import FeedInput, InputReader, MultiProcessInput, QueueInput, StagingInput, TFDatasetInput

SIG = [tf.TensorSpec([None, 2], tf.float32, name="x"), tf.TensorSpec([None], tf.int64, name="y")]
TOWERS, RESUMED_AT = 2, 4  # 4 steps of 2 towers used 8 datapoints: 1.6 passes of 5


def make_data(n: int = 5) -> list:
    return [(np.full([2, 2], i + 0.5, "float32"), np.full([2], i, "int64")) for i in range(n)]


def read_labels(source, steps: int, resume: bool) -> list[list[int]]:
    """The labels of each step's towers: ``steps`` steps, or, resuming, those after RESUMED_AT."""
    reader = InputReader(source, SIG, num_towers=TOWERS)
    if resume:  # as AutoResumeTrainConfig does: the loop continues after step RESUMED_AT of its epoch
        reader.loop.load_state_dict({"starting_epoch": 1, "max_epoch": 1, "steps_per_epoch": steps,
                                     "epoch_num": 1, "local_step": RESUMED_AT - 1,
                                     "global_step": RESUMED_AT, "epoch_finished": False})
    return [[int(tower[1][0]) for tower in step] for step in reader.read(steps_per_epoch=steps, max_epoch=1)]


INPUTS = {
    "FeedInput": FeedInput,
    "QueueInput": QueueInput,
    "TFDatasetInput": TFDatasetInput,
    "StagingInput(QueueInput)": lambda df: StagingInput(QueueInput(df)),
}


@pytest.mark.parametrize("make_input", INPUTS.values(), ids=INPUTS.keys())
@pytest.mark.parametrize("dataflow", ["list", "shuffled DataFromList"])
def test_a_resumed_input_continues_where_the_uninterrupted_one_was(make_input, dataflow, run_with_deadline):
    def make_df():
        if dataflow == "list":
            return make_data()
        fix_rng_seed(3)  # reset_state seeds with it: the passes replay
        return DataFromList(make_data(), shuffle=True)

    try:
        whole = run_with_deadline(lambda: read_labels(make_input(make_df()), RESUMED_AT + 3, resume=False))
        resumed = run_with_deadline(lambda: read_labels(make_input(make_df()), RESUMED_AT + 3, resume=True))
    finally:
        fix_rng_seed(None)
    assert resumed == whole[RESUMED_AT:]


def test_an_input_without_a_position_warns_and_starts_afresh(caplog):
    source = MultiProcessInput(make_data(), num_workers=1)
    InputReader(source, SIG, num_towers=TOWERS)
    with caplog.at_level(logging.WARNING, logger="trainstack.inputs"):
        assert source.resume_at_step(RESUMED_AT) is False
    assert "cannot resume at its position in the data (after 8 datapoints)" in caplog.text
