"""The one helper with which the multi-process trainers leave the logger directory to the chief."""
from __future__ import annotations

import logging

from trainstack.callbacks import JSONWriter, ScalarPrinter, TFEventWriter
from trainstack.distributed._writers import monitors_of_process, without_logger_dir_writers


def test_non_chief_processes_drop_the_writers_of_the_logger_directory(caplog, tmp_path):
    own = JSONWriter(logdir=str(tmp_path))
    printer = ScalarPrinter()
    with caplog.at_level(logging.INFO, logger="trainstack.distributed"):
        kept = without_logger_dir_writers([JSONWriter(), own, TFEventWriter(), printer], "worker 1")
    assert kept == [own, printer]
    skipped = [r.getMessage() for r in caplog.records if "skips" in r.getMessage()]
    assert len(skipped) == 2 and all(m.startswith("worker 1 skips") for m in skipped)
    assert "JSONWriter" in skipped[0] and "TFEventWriter" in skipped[1]


def test_a_monitor_of_ones_own_may_declare_it():
    class Uploader(ScalarPrinter):
        writes_to_logger_dir = True

    assert without_logger_dir_writers([Uploader()], "rank 1") == []
    assert without_logger_dir_writers((), "rank 1") == []


def test_one_rule_keeps_every_writer_on_the_chief_and_on_a_process_with_a_directory_of_its_own():
    writers = [JSONWriter(), TFEventWriter(), ScalarPrinter()]
    assert monitors_of_process(writers, is_chief=True, process="rank 0") == writers
    assert monitors_of_process(writers, is_chief=False, process="rank 1", own_logger_dir=True) == writers
    kept = monitors_of_process(writers, is_chief=False, process="rank 1")
    assert [type(m).__name__ for m in kept] == ["ScalarPrinter"]


def test_with_a_gate_every_process_keeps_the_writers_behind_it():
    """The elastic trainer's form of the same rule (its chief may change): the writers stay on every
    process, each wrapped by the gate; the others as they are."""
    json_writer, events, printer, own = JSONWriter(), TFEventWriter(), ScalarPrinter(), JSONWriter(logdir="elsewhere")
    gated = []

    def gate(monitor):
        gated.append(monitor)
        return ("gated", monitor)

    for is_chief in (True, False):
        gated.clear()
        kept = monitors_of_process([json_writer, events, printer, own], is_chief=is_chief, process="rank 1", gate=gate)
        assert kept == [("gated", json_writer), ("gated", events), printer, own]
        assert gated == [json_writer, events]
