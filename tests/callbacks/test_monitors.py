"""The monitors: TFEventWriter (read back with TensorBoard's reader), JSONWriter, ScalarPrinter."""
from __future__ import annotations

import glob
import json
import logging
import os

import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import trainstack.loop
from trainstack.callbacks import (
    JSONWriter,
    MonitorBase,
    Monitors,
    ScalarPrinter,
    StorageError,
    TFEventWriter,
    unset_logger_dir,
)
from trainstack.loop import Callback

STEPS, EPOCHS = 3, 2


class PutLoss(Callback):
    """Fetches the step's loss and puts it as the scalar "loss"; remembers (step, loss)."""

    def __init__(self):
        self.seen = []

    def _before_run(self, ctx):
        return "loss"

    def _after_run(self, ctx, values):
        loss = float(values.results)
        self.seen.append((self.global_step, loss))
        self.trainer.monitors.put_scalar("loss", loss)


def PutAt(hook, name, value=1.0):
    """A callback that puts the scalar ``name`` = ``value`` in the hook ``hook``."""
    def put(self, *args):
        self.trainer.monitors.put_scalar(name, value)
    return type(f"Put_{name}", (Callback,), {"_" + hook: put})()


def run(trainer, callbacks, monitors, epochs=EPOCHS, **kwargs):
    trainer.train(callbacks, monitors, steps_per_epoch=STEPS, max_epoch=epochs, **kwargs)


def test_monitors_are_reexported_and_run_everywhere():
    assert MonitorBase is trainstack.loop.MonitorBase and Monitors is trainstack.loop.Monitors
    for m in (TFEventWriter(), JSONWriter(), ScalarPrinter()):
        assert isinstance(m, MonitorBase) and not m.chief_only


# -- TFEventWriter ---------------------------------------------------------------------------
def read_events(logdir):
    acc = EventAccumulator(logdir, size_guidance={"scalars": 0, "images": 0})
    acc.Reload()
    return acc


def scalar_values(acc, tag):
    return [(e.step, e.value) for e in acc.Scalars(tag)] if tag in acc.Tags()["scalars"] else []


class PutImages(Callback):
    """Puts an HW, an HWC and an NHWC image at each epoch's end; remembers what it put."""

    def __init__(self):
        self.put = []

    def _trigger_epoch(self):
        rng = np.random.default_rng(self.epoch_num)
        images = {"gray": rng.integers(0, 256, (4, 5)).astype("float32"),
                  "rgb": rng.integers(0, 256, (4, 5, 3)).astype("uint8"),
                  "batch": rng.integers(0, 256, (2, 4, 5, 1)) + 0.2}
        for name, img in images.items():
            self.trainer.monitors.put_image(name, img)
        self.put.append((self.global_step, images))


def test_tfevent_writer_scalars_and_images_read_back(linear_trainer, logger_dir):
    loss, images = PutLoss(), PutImages()
    early = PutAt("setup_graph", "early", 7.0)  # put before the writer's own setup_graph
    run(linear_trainer(), [early, loss, images], [TFEventWriter()])

    acc = read_events(logger_dir)
    written = scalar_values(acc, "loss")
    assert [s for s, _ in written] == [s for s, _ in loss.seen] == list(range(1, STEPS * EPOCHS + 1))
    np.testing.assert_allclose([v for _, v in written], [v for _, v in loss.seen], rtol=1e-6)
    assert scalar_values(acc, "early") == [(0, 7.0)]

    expected = {"gray": lambda a: a[:, :, None], "rgb": lambda a: a,
                "batch/0": lambda a: np.rint(a[0]), "batch/1": lambda a: np.rint(a[1])}
    for tag, to_hwc in expected.items():
        events = acc.Images(tag)
        assert [e.step for e in events] == [s for s, _ in images.put]
        for event, (_, put) in zip(events, images.put):
            decoded = tf.io.decode_png(event.encoded_image_string).numpy()
            np.testing.assert_array_equal(decoded, to_hwc(put[tag.split("/")[0]]).astype("uint8"))


@pytest.mark.parametrize("max_queue, on_disk", [
    (1, [1, 2, 3, 4, 5, 6]),        # each scalar is written when put
    (1000, [0, 0, 0, 3, 3, 3]),     # written at each epoch's end only
])
def test_tfevent_writer_queue_and_epoch_flush(linear_trainer, logger_dir, max_queue, on_disk):
    class CountOnDisk(Callback):
        def __init__(self):
            self.counts = []

        def _trigger_step(self):
            self.counts.append(len(scalar_values(read_events(logger_dir), "loss")))

    counter = CountOnDisk()
    run(linear_trainer(), [PutLoss(), counter], [TFEventWriter(max_queue=max_queue, flush_secs=1000)])
    assert counter.counts == on_disk


def test_tfevent_writer_split_files(linear_trainer, logger_dir):
    run(linear_trainer(), [PutLoss()], [TFEventWriter(split_files=True)])
    files = glob.glob(os.path.join(logger_dir, "events.out.tfevents.*"))
    assert len(files) == EPOCHS  # one per epoch (each opened by the epoch's first write)
    assert len(scalar_values(read_events(logger_dir), "loss")) == STEPS * EPOCHS


def test_tfevent_writer_opens_its_file_at_the_first_write(linear_trainer, logger_dir):
    """Nothing is opened before data is written (TensorFlow's first file writer costs start-up time):
    no event file during the first epoch's steps, while the queue holds the scalars; one after it."""
    class CountFiles(Callback):
        def __init__(self):
            self.during = []

        def _trigger_step(self):
            self.during.append(len(glob.glob(os.path.join(logger_dir, "events.out.tfevents.*"))))

    counter = CountFiles()
    run(linear_trainer(), [PutLoss(), counter], [TFEventWriter(max_queue=1000, flush_secs=1000)])
    assert counter.during[:STEPS] == [0] * STEPS and counter.during[-1] == 1
    assert len(scalar_values(read_events(logger_dir), "loss")) == STEPS * EPOCHS


def test_tfevent_writer_writes_summary_events(linear_trainer, logger_dir):
    class PutSummary(Callback):
        def _trigger_epoch(self):
            summary = tf.compat.v1.Summary(value=[tf.compat.v1.Summary.Value(
                tag="legacy", simple_value=float(self.epoch_num))])
            self.trainer.monitors.put_event(tf.compat.v1.Event(summary=summary))

    run(linear_trainer(), [PutSummary()], [TFEventWriter()])
    assert scalar_values(read_events(logger_dir), "legacy") == [(3, 1.0), (6, 2.0)]


def test_tfevent_writer_refuses_bad_input():
    with pytest.raises(ValueError, match=r"image 'x' must be HW, HWC or NHWC.*\(4, 5, 2\)"):
        TFEventWriter().process_image("x", np.zeros((4, 5, 2)))
    with pytest.raises(TypeError, match="Summary"):
        TFEventWriter().process_event("not an event")
    with pytest.raises(ValueError, match="max_queue"):
        TFEventWriter(max_queue=0)


def test_tfevent_writer_without_logger_dir_warns_and_does_nothing(linear_trainer, caplog, tmp_path):
    unset_logger_dir()
    with caplog.at_level(logging.WARNING, logger="trainstack.callbacks"):
        run(linear_trainer(), [PutLoss()], [TFEventWriter()])
    warnings = [r for r in caplog.records if "TFEventWriter" in r.getMessage()]
    assert len(warnings) == 1 and "no logger directory" in warnings[0].getMessage()


# -- JSONWriter --------------------------------------------------------------------------------
def read_lines(logger_dir):
    with open(os.path.join(logger_dir, JSONWriter.FILENAME), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_json_writer_one_line_per_epoch_and_nothing_lost(linear_trainer, logger_dir):
    loss = PutLoss()
    callbacks = [PutAt("before_train", "setup_value", 3), loss, PutAt("after_train", "final", 5)]
    run(linear_trainer(), callbacks, [JSONWriter()])
    lines = read_lines(logger_dir)
    assert lines == [
        {"setup_value": 3, "epoch_num": 0, "global_step": 0},
        {"loss": loss.seen[STEPS - 1][1], "epoch_num": 1, "global_step": STEPS},
        {"loss": loss.seen[-1][1], "epoch_num": 2, "global_step": 2 * STEPS},
        {"final": 5, "epoch_num": 2, "global_step": 2 * STEPS},
    ]
    assert JSONWriter.load_existing_json(logger_dir) == lines
    assert JSONWriter.load_existing_epoch_number(logger_dir) == 2
    assert JSONWriter.load_existing_epoch_number() == 2  # defaults to the logger directory


def test_json_writer_appends_on_resume(linear_trainer, logger_dir):
    run(linear_trainer(), [PutLoss()], [JSONWriter()])
    with open(os.path.join(logger_dir, JSONWriter.FILENAME), "rb") as f:
        before = f.read()
    run(linear_trainer(), [PutLoss()], [JSONWriter()], epochs=4, starting_epoch=3)
    with open(os.path.join(logger_dir, JSONWriter.FILENAME), "rb") as f:
        after = f.read()
    assert after.startswith(before)
    assert [r["epoch_num"] for r in read_lines(logger_dir)] == [1, 2, 3, 4]


def test_json_writer_crash_keeps_finished_epochs(linear_trainer, logger_dir):
    class Crash(Callback):
        def _trigger_step(self):
            if self.global_step == STEPS + 2:
                raise RuntimeError("boom")

    loss = PutLoss()
    with pytest.raises(RuntimeError, match="boom"):
        run(linear_trainer(), [loss, Crash()], [JSONWriter()])
    # epoch 1's line, then the scalars of the unfinished epoch 2, marked with the last finished epoch
    assert read_lines(logger_dir) == [
        {"loss": loss.seen[STEPS - 1][1], "epoch_num": 1, "global_step": STEPS},
        {"loss": loss.seen[-1][1], "epoch_num": 1, "global_step": STEPS + 2},
    ]
    assert JSONWriter.load_existing_epoch_number(logger_dir) == 1


@pytest.mark.parametrize("damaged", ['{"epoch_num": 2, "global_st', '{"epoch_num": 2, "global_st\n',
                                     '{"epoch_num": 2, "global_step": 6}}\n', '[2, 6]\n'],
                         ids=["cut-off", "cut-off-with-newline", "bad-json-with-newline", "not-an-object"])
def test_json_writer_drops_a_damaged_last_line_with_or_without_its_newline(linear_trainer, logger_dir,
                                                                           caplog, damaged):
    path = os.path.join(logger_dir, JSONWriter.FILENAME)
    with open(path, "w") as f:
        f.write('{"epoch_num": 1, "global_step": 3}\n' + damaged)
    with caplog.at_level(logging.WARNING, logger="trainstack.callbacks"):
        assert JSONWriter.load_existing_json(logger_dir) == [{"epoch_num": 1, "global_step": 3}]
        assert JSONWriter.load_existing_epoch_number(logger_dir) == 1
    assert "stats.jsonl:2: dropping the damaged last line" in caplog.text

    # resuming cuts the damaged line off, so the new lines follow the last good one, and the
    # next reader finds nothing to drop
    run(linear_trainer(), [PutLoss()], [JSONWriter()], epochs=2, starting_epoch=2)
    assert [r["epoch_num"] for r in read_lines(logger_dir)] == [1, 2]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="trainstack.callbacks"):
        assert [r["epoch_num"] for r in JSONWriter.load_existing_json(logger_dir)] == [1, 2]
    assert "damaged" not in caplog.text


def test_json_writer_completes_a_good_last_line_without_its_newline(linear_trainer, logger_dir):
    with open(os.path.join(logger_dir, JSONWriter.FILENAME), "w") as f:
        f.write('{"epoch_num": 1, "global_step": 3}')
    run(linear_trainer(), [PutLoss()], [JSONWriter()], epochs=2, starting_epoch=2)
    assert [r["epoch_num"] for r in read_lines(logger_dir)] == [1, 2]


def test_json_writer_corrupt_middle_line_is_an_error(linear_trainer, logger_dir):
    path = os.path.join(logger_dir, JSONWriter.FILENAME)
    text = '{"epoch_num": 1}\n{oops\n{"epoch_num": 2}\n'
    with open(path, "w") as f:
        f.write(text)
    with pytest.raises(ValueError, match=r"stats\.jsonl:2: not valid JSON"):
        JSONWriter.load_existing_json(logger_dir)
    # a run appending to it stops before writing anything, naming the line
    with pytest.raises(ValueError, match=r"stats\.jsonl:2: not valid JSON"):
        run(linear_trainer(), [PutLoss()], [JSONWriter()], epochs=3, starting_epoch=3)
    with open(path) as f:
        assert f.read() == text


def test_json_writer_without_file_or_dir(tmp_path):
    unset_logger_dir()
    assert JSONWriter.load_existing_json(str(tmp_path)) is None
    assert JSONWriter.load_existing_epoch_number(str(tmp_path)) is None
    assert JSONWriter.load_existing_json() is None


def test_json_writer_without_logger_dir_warns(linear_trainer, caplog):
    unset_logger_dir()
    with caplog.at_level(logging.WARNING, logger="trainstack.callbacks"):
        run(linear_trainer(), [PutLoss()], [JSONWriter()])
    assert "JSONWriter: no logger directory is set" in caplog.text


# -- ScalarPrinter -------------------------------------------------------------------------------
def printed(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == "trainstack.callbacks" and ": " in r.getMessage()]


def test_scalar_printer_prints_each_epoch(linear_trainer, caplog):
    loss = PutLoss()
    with caplog.at_level(logging.INFO, logger="trainstack.callbacks"):
        run(linear_trainer(), [loss, PutAt("trigger_epoch", "val_loss", 0.25)], [ScalarPrinter()])
    last_of_epoch = [loss.seen[STEPS - 1][1], loss.seen[-1][1]]
    assert printed(caplog) == [line for v in last_of_epoch
                               for line in (f"loss: {v:.5g}", "val_loss: 0.25")]


def test_scalar_printer_each_step(linear_trainer, caplog):
    loss = PutLoss()
    with caplog.at_level(logging.INFO, logger="trainstack.callbacks"):
        run(linear_trainer(), [loss], [ScalarPrinter(enable_step=True)])
    assert printed(caplog) == [f"loss: {v:.5g}" for _, v in loss.seen]


@pytest.mark.parametrize("whitelist, blacklist, shown", [
    (None, None, ["loss", "lr", "val_loss"]),
    (["loss"], None, ["loss", "val_loss"]),           # searched, as in tensorpack
    (["^loss$"], None, ["loss"]),
    (None, ["^val_", "lr"], ["loss"]),
    (["loss", "lr"], ["val"], ["loss", "lr"]),
])
def test_scalar_printer_filters(linear_trainer, caplog, whitelist, blacklist, shown):
    callbacks = [PutAt("trigger_epoch", n) for n in ("val_loss", "lr", "loss")]
    with caplog.at_level(logging.INFO, logger="trainstack.callbacks"):
        run(linear_trainer(), callbacks, [ScalarPrinter(whitelist=whitelist, blacklist=blacklist)],
            epochs=1)
    assert [line.split(":")[0] for line in printed(caplog)] == shown


def test_scalar_printer_refuses_bad_patterns():
    with pytest.raises(ValueError, match=r"whitelist: invalid regular expression '\('"):
        ScalarPrinter(whitelist=["("])
    with pytest.raises(TypeError, match="blacklist: patterns must be strings"):
        ScalarPrinter(blacklist=[3])


@pytest.mark.parametrize("writer", [JSONWriter, TFEventWriter])
def test_writers_say_whether_they_write_into_the_logger_directory(writer, linear_trainer, logger_dir, tmp_path):
    default, own = writer(), writer(logdir=str(tmp_path / "own"))
    assert default.writes_to_logger_dir and not own.writes_to_logger_dir
    run(linear_trainer(), [PutLoss()], [default, own], epochs=1)
    # set up, the default one now holds the logger directory as its logdir: the answer stays
    assert default.writes_to_logger_dir and not own.writes_to_logger_dir


def test_a_lock_file_that_cannot_be_made_stops_the_run_as_a_failed_write_does(linear_trainer, tmp_path):
    blocked = tmp_path / "events"
    blocked.write_text("")  # a file where the events' directory should be
    with pytest.raises(StorageError, match=rf"TFEventWriter could not write the lock file {blocked}/.trainstack.lock"
                                           r": FileExistsError"):
        run(linear_trainer(), [PutLoss()], [TFEventWriter(logdir=str(blocked))])


def test_event_files_that_cannot_be_written_stop_the_run_naming_the_directory(linear_trainer, tmp_path):
    events = tmp_path / "events"

    class BreakTheDirectory(Callback):  # after epoch 1 the directory is a file: no new event file
        def _trigger_epoch(self):
            if self.epoch_num == 1:
                events.rename(tmp_path / "away")
                events.write_text("")

    with pytest.raises(StorageError, match=rf"TFEventWriter could not write TensorBoard events in {events}: "):
        run(linear_trainer(), [PutLoss(), BreakTheDirectory()], [TFEventWriter(logdir=str(events), split_files=True)])
