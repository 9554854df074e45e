"""tensorpack's ``logger`` module, and trainstack's console logging (each line printed once).

The console tests run a script in a subprocess with no logging configured, as a ported
tensorpack script is, and count its lines on stdout + stderr.
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap

import pytest

import trainstack.callbacks as tc
from trainstack.callbacks import logger


def _run(script: str, cwd, timeout: int = 240) -> str:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=cwd, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout
    return proc.stdout


def test_logger_is_a_module_with_tensorpacks_functions():
    assert "logger" in tc.__all__
    for name in ("set_logger_dir", "auto_set_dir", "get_logger_dir", "info", "warn", "warning", "error",
                 "exception", "debug", "critical", "setLevel", "addFilter"):
        assert callable(getattr(logger, name)), name
    # one place for the logger directory: the logdir module's
    assert logger.set_logger_dir is tc.set_logger_dir and logger.get_logger_dir is tc.get_logger_dir


def test_logger_dir_is_shared_with_set_logger_dir(tmp_path, caplog):
    try:
        used = logger.set_logger_dir(str(tmp_path / "run"), action="d")
        assert tc.get_logger_dir() == used == logger.get_logger_dir() == logger.LOG_DIR
        with caplog.at_level(logging.INFO, logger="trainstack"):
            logger.info("hello %s", "there")
            logger.warn("careful")
        # the records propagate (caplog sees them) and reach the log file
        assert [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "trainstack"] == [
            ("INFO", "hello there"), ("WARNING", "careful")]
        with open(os.path.join(used, "log.log")) as f:
            text = f.read()
        assert "hello there" in text and "careful" in text
    finally:
        tc.unset_logger_dir()
    assert logger.LOG_DIR is None


def test_auto_set_dir_uses_the_script_name(tmp_path):
    script = tmp_path / "my_train_script.py"
    script.write_text(textwrap.dedent("""
        from trainstack.callbacks import logger
        print("DIR", logger.auto_set_dir(action="k", name="exp1"))
        logger.info("written to the log file")
    """))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    expected = os.path.join("train_log", "my_train_script" + ("_" if os.name == "nt" else ":") + "exp1")
    assert f"DIR {expected}" in proc.stdout
    assert "written to the log file" in (tmp_path / expected / "log.log").read_text()


SAVER_SCRIPT = """
    import sys
    import tensorflow as tf
    from trainstack.callbacks import ModelSaver, logger
    from trainstack.loop import Trainer

    class T(Trainer):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(1.0)
            self.checkpoint_objects = {"w": self.w}
            self.train_op = tf.function(lambda: self.w.assign_add(1.0))

    logger.set_logger_dir(sys.argv[1] if len(sys.argv) > 1 else "train_log/saver", action="d")
    logger.info("LINE-BEFORE-TRAIN")
    T().train([ModelSaver()], [], steps_per_epoch=2, max_epoch=2)
    logger.info("LINE-AFTER-CHECKPOINT")
"""


def test_each_line_is_printed_once_after_a_checkpoint(tmp_path):
    # TensorFlow's first checkpoint makes absl run logging.basicConfig(): the lines must not double
    out = _run(SAVER_SCRIPT, tmp_path)
    assert out.count("LINE-BEFORE-TRAIN") == 1, out
    assert out.count("LINE-AFTER-CHECKPOINT") == 1, out
    assert out.count("Model saved to") == 2, out          # two epochs, two checkpoints
    assert out.count("Start epoch 2") == 1, out
    assert "INFO:trainstack" not in out, out               # nothing in the bare basicConfig format


def test_info_lines_are_printed_without_any_logging_setup(tmp_path):
    out = _run("""
        from trainstack.callbacks import logger
        import logging
        logging.getLogger("trainstack.towers").info("Automatically applying something.")
        logger.debug("NOT-SHOWN")
    """, tmp_path)
    assert out.count("Automatically applying something.") == 1, out
    assert "NOT-SHOWN" not in out


def test_an_applications_own_logging_config_prints_the_lines_once_in_its_format(tmp_path):
    out = _run("""
        import logging, sys
        import trainstack.callbacks
        logging.basicConfig(level=logging.INFO, format="APP %(name)s: %(message)s", stream=sys.stdout)
        logging.getLogger("trainstack.loop").info("one line")
    """, tmp_path)
    assert out.count("one line") == 1, out
    assert "APP trainstack.loop: one line" in out


@pytest.mark.parametrize("level", ["warning", "error"])
def test_warnings_and_errors_are_tagged(level, capsys, monkeypatch):
    # no application handler on the root logger: the trainstack console handler prints
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    getattr(logger, level)("something %s", "odd")
    out = capsys.readouterr().err
    assert out.count("something odd") == 1
    assert {"warning": "WRN", "error": "ERR"}[level] in out
