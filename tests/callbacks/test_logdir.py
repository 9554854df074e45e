"""The logger directory: set/get, the actions on an existing directory, the log file."""
from __future__ import annotations

import logging
import os
import sys
import types

import pytest

from trainstack.callbacks import auto_set_dir, get_logger_dir, set_logger_dir, unset_logger_dir

log = logging.getLogger("trainstack.callbacks.test")


@pytest.fixture(autouse=True)
def _no_logger_dir():
    unset_logger_dir()
    yield
    unset_logger_dir()


@pytest.fixture
def old_run(tmp_path):
    """A non-empty directory, as left by a previous run."""
    d = tmp_path / "run"
    d.mkdir()
    (d / "checkpoint").write_text("old")
    return str(d)


def read_log(dirname):
    with open(os.path.join(dirname, "log.log"), encoding="utf-8") as f:
        return f.read()


def test_set_creates_dir_and_logs_to_file(tmp_path):
    assert get_logger_dir() is None
    d = set_logger_dir(str(tmp_path / "a" / "b" / ""))
    assert d == str(tmp_path / "a" / "b") == get_logger_dir()
    log.info("hello from the test")
    log.debug("not recorded")
    text = read_log(d)
    assert "hello from the test" in text and "not recorded" not in text


def test_changing_dir_moves_the_log_file(tmp_path):
    first = set_logger_dir(str(tmp_path / "first"))
    second = set_logger_dir(str(tmp_path / "second"))
    log.info("only in the second")
    assert "only in the second" in read_log(second)
    assert "only in the second" not in read_log(first)
    unset_logger_dir()
    log.info("after unset")
    assert get_logger_dir() is None and "after unset" not in read_log(second)


def test_empty_or_hidden_only_dir_needs_no_action(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    (d / ".nfs000").write_text("")
    assert set_logger_dir(str(d)) == str(d)


@pytest.mark.parametrize("stdin", [types.SimpleNamespace(isatty=lambda: False), None],
                         ids=["not-a-tty", "no-stdin"])
def test_existing_dir_without_terminal_is_backed_up_with_a_warning(old_run, tmp_path, stdin,
                                                                   monkeypatch, caplog):
    """No terminal to ask (CI, nohup, a batch job): tensorpack's prompt becomes the documented
    default, 'backup': the old run is kept whole under <dir><timestamp>, the new one starts
    in an empty <dir>, and a WARNING says so and how to choose another action."""
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr("builtins.input", lambda prompt: pytest.fail("asked without a terminal"))
    with caplog.at_level(logging.WARNING, logger="trainstack.callbacks"):
        assert set_logger_dir(old_run) == old_run == get_logger_dir()
    assert os.listdir(old_run) == ["log.log"]
    backups = [p for p in os.listdir(tmp_path) if p.startswith("run") and p != "run"]
    assert len(backups) == 1
    backup = tmp_path / backups[0]
    assert os.listdir(backup) == ["checkpoint"] and (backup / "checkpoint").read_text() == "old"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    message = warnings[0].getMessage()
    for part in (old_run, str(backup), "no terminal", "'backup'", "action=", "'k'/'keep'",
                 "'q'/'quit'"):
        assert part in message, part
    assert message in read_log(old_run)  # also recorded in the new run's log file


def test_auto_set_dir_without_terminal_backs_up_the_previous_run(tmp_path, monkeypatch):
    """The README's script, run twice from a batch job: the second run starts fresh in
    train_log/<script>, the first run's files are kept beside it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "__main__", types.SimpleNamespace(__file__="/x/gan.py"))
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(isatty=lambda: False))
    first = auto_set_dir()
    (tmp_path / first / "model-100.index").write_text("first run")
    assert auto_set_dir() == first
    assert os.listdir(tmp_path / first) == ["log.log"]
    backups = [p for p in os.listdir(tmp_path / "train_log") if p != "gan"]
    assert len(backups) == 1 and backups[0].startswith("gan")
    kept = tmp_path / "train_log" / backups[0]
    assert sorted(os.listdir(kept)) == ["log.log", "model-100.index"]
    assert (kept / "model-100.index").read_text() == "first run"


def test_explicit_quit_without_terminal_still_refuses(old_run, monkeypatch):
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(isatty=lambda: False))
    with pytest.raises(FileExistsError, match="quit"):
        set_logger_dir(old_run, action="q")
    assert os.listdir(old_run) == ["checkpoint"] and get_logger_dir() is None


def test_existing_dir_on_a_terminal_asks_until_valid(old_run, monkeypatch):
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(isatty=lambda: True))
    answers = iter(["", "maybe", "Keep"])
    monkeypatch.setattr("builtins.input", lambda prompt: next(answers))
    assert set_logger_dir(old_run) == old_run
    assert next(answers, None) is None
    assert os.path.exists(os.path.join(old_run, "checkpoint"))


@pytest.mark.parametrize("action", ["k", "keep", "KEEP"])
def test_keep_appends_to_the_log(old_run, action):
    with open(os.path.join(old_run, "log.log"), "w") as f:
        f.write("previous run\n")
    assert set_logger_dir(old_run, action) == old_run
    log.info("resumed")
    assert read_log(old_run).startswith("previous run\n") and "resumed" in read_log(old_run)
    assert os.path.exists(os.path.join(old_run, "checkpoint"))


@pytest.mark.parametrize("action", ["b", "backup"])
def test_backup_moves_the_old_dir_aside(old_run, action, tmp_path):
    assert set_logger_dir(old_run, action) == old_run
    assert os.listdir(old_run) == ["log.log"]
    backups = [p for p in os.listdir(tmp_path) if p.startswith("run") and p != "run"]
    assert len(backups) == 1
    assert os.listdir(tmp_path / backups[0]) == ["checkpoint"]


def test_backup_twice_in_the_same_second_keeps_both(old_run, tmp_path):
    set_logger_dir(old_run, "b")
    (tmp_path / "run" / "checkpoint").write_text("second")
    set_logger_dir(old_run, "backup")
    assert len([p for p in os.listdir(tmp_path) if p.startswith("run")]) == 3


@pytest.mark.parametrize("action", ["d", "delete"])
def test_delete_empties_the_dir(old_run, action):
    set_logger_dir(old_run, action)
    assert os.listdir(old_run) == ["log.log"]


def test_delete_the_current_logger_dir(old_run):
    set_logger_dir(old_run, "keep")
    log.info("old")
    set_logger_dir(old_run, "delete")
    log.info("new")
    assert "old" not in read_log(old_run) and "new" in read_log(old_run)


@pytest.mark.parametrize("action", ["n", "new"])
def test_new_uses_a_timestamped_dir(old_run, action):
    d = set_logger_dir(old_run, action)
    assert d != old_run and d.startswith(old_run) and get_logger_dir() == d
    assert os.listdir(old_run) == ["checkpoint"]
    assert os.path.isfile(os.path.join(d, "log.log"))


@pytest.mark.parametrize("action", ["q", "quit"])
def test_quit_refuses_and_keeps_the_previous_dir(old_run, action, tmp_path):
    previous = set_logger_dir(str(tmp_path / "previous"))
    with pytest.raises(FileExistsError, match="quit"):
        set_logger_dir(old_run, action)
    assert get_logger_dir() == previous
    log.info("still logged")
    assert "still logged" in read_log(previous)


def test_unknown_action_is_refused_before_anything(tmp_path):
    with pytest.raises(ValueError, match=r"unknown logger directory action 'x'.*'b'/'backup'"):
        set_logger_dir(str(tmp_path / "fresh"), "x")
    assert not os.path.exists(tmp_path / "fresh")


def test_a_file_is_not_a_dir(tmp_path):
    previous = set_logger_dir(str(tmp_path / "previous"))
    (tmp_path / "f").write_text("")
    with pytest.raises(NotADirectoryError, match="not a directory"):
        set_logger_dir(str(tmp_path / "f"))
    assert get_logger_dir() == previous


def test_auto_set_dir_names_the_dir_after_the_script(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "__main__", types.SimpleNamespace(__file__="/x/mnist-convnet.py"))
    assert auto_set_dir() == os.path.join("train_log", "mnist-convnet")
    expected = "mnist-convnet_exp1" if os.name == "nt" else "mnist-convnet:exp1"
    assert auto_set_dir(name="exp1") == os.path.join("train_log", expected)
    assert os.path.isfile(tmp_path / "train_log" / expected / "log.log")


def test_auto_set_dir_without_a_script(monkeypatch):
    monkeypatch.setitem(sys.modules, "__main__", types.SimpleNamespace())
    with pytest.raises(RuntimeError, match="set_logger_dir"):
        auto_set_dir()
