"""Fixtures shared by the layers' tests (each layer's own live in its folder's conftest.py).

- ``logger_dir``: a fresh logger directory for one test.
- ``socket_dir``: a short, fresh folder for Unix socket files (``ipc://`` addresses), made
  under ``/tmp`` and removed afterwards. Not ``tmp_path``: under nox that lies inside the
  clone, and a socket's path holds at most 107 bytes, so a deep clone could not bind there.
- ``once_per_session(name, make)``: a run that is expensive (several processes, or a whole
  training run used as a reference), which under pytest-xdist every worker would otherwise
  repeat. It gives the directory ``<session tmp>/<name>``, calling ``make(directory)`` only the
  first time in the whole test session (a lock in the session's temporary directory, shared by
  xdist's workers); a ``make`` that raised is tried again by the next caller.
- ``run_with_deadline(fn, seconds=30.0)``: ``fn()`` in a thread; its result, or its error
  raised. ``seconds`` is a hang guard, never a speed claim: give it generously, assert the
  events (what was raised, what ended, what was closed), and measure speed in ``benchmarks/``.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@pytest.fixture
def logger_dir(tmp_path):
    """A fresh logger directory (set_logger_dir) for one test; unset afterwards."""
    from trainstack.callbacks import set_logger_dir, unset_logger_dir  # noqa: PLC0415 - not in the loop layer

    dirname = set_logger_dir(str(tmp_path / "train_log"))
    yield dirname
    unset_logger_dir()


def _run_with_deadline(fn: Callable[[], object], seconds: float = 30.0) -> object:
    result: dict = {}

    def target() -> None:
        try:
            result["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            result["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"hung: did not end within {seconds} s (a hang guard)"
    if "error" in result:
        raise result["error"]
    return result["value"]


@pytest.fixture
def run_with_deadline() -> Callable[..., object]:
    """``run_with_deadline(fn, seconds=30.0)``: see the module docstring."""
    return _run_with_deadline


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    """A fresh folder with a short path for socket files; removed afterwards."""
    path = tempfile.mkdtemp(prefix="ts-", dir="/tmp")
    yield Path(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def once_per_session(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, Callable[[Path], None]], Path]:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = tmp_path_factory.getbasetemp().parent  # this session's, shared by its workers
    else:
        root = tmp_path_factory.getbasetemp()

    def run(name: str, make: Callable[[Path], None]) -> Path:
        out = root / name
        with open(root / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (out / ".done").exists():
                out.mkdir(exist_ok=True)
                make(out)
                (out / ".done").touch()
        return out

    return run
