"""Storage faults lose nothing and are never silent: each fault an operator injects into an
``AutoResumeTrainConfig`` + ``ModelSaver`` run (storage_fault_job.py, run as a program or in
this process) ends either with a non-zero exit and a message naming the fault, or with a resume
from the newest intact checkpoint whose final weights equal an uninterrupted run's.

1. a full disk (a small tmpfs, as root) or a file-size limit (anywhere) during a save;
2. every checkpoint damaged, or the ``checkpoint`` state file deleted, cut off or emptied;
3. two runs on one log directory at once (and the backup action moving a live directory);
4. a damaged line in ``stats.jsonl``, with or without its newline;
5. a kill inside a save, leaving a ``model-<N>_temp/`` folder.
"""
from __future__ import annotations

import contextlib
import fcntl
import glob
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from trainstack.callbacks import (
    LogDirLockedError,
    StorageError,
    load_loop_state,
    set_logger_dir,
    unset_logger_dir,
)
from trainstack.callbacks.logdir_lock import LOCK_FILE

JOB = Path(__file__).with_name("storage_fault_job.py")
EPOCHS = 6
STEPS = 6  # storage_fault_job.STEPS


def job(logdir, *args, epochs=EPOCHS, wait=True):
    """Run storage_fault_job.py on ``logdir`` (a CompletedProcess), or start it (a Popen)."""
    command = [sys.executable, str(JOB), str(logdir), "--epochs", str(epochs), *map(str, args)]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    if not wait:
        return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


def checkpoints(logdir):
    """The checkpoints listed in ``logdir``, oldest (lowest step) first."""
    names = [os.path.basename(p)[:-len(".index")] for p in glob.glob(os.path.join(logdir, "model-*.index"))]
    return sorted(names, key=lambda name: int(name.split("-")[1]))


def epochs_in_stats(logdir):
    with open(os.path.join(logdir, "stats.jsonl")) as f:
        return [json.loads(line)["epoch_num"] for line in f]


def snapshot(logdir):
    """Every checkpoint file's bytes."""
    return {p: Path(p).read_bytes() for p in glob.glob(os.path.join(logdir, "model-*"))}


def wait_for(path, proc):
    """Until ``path`` exists (``proc`` must stay alive); the deadline is a hang guard only."""
    deadline = time.monotonic() + 600
    while not os.path.exists(path):
        assert proc.poll() is None, f"the run ended first: {proc.communicate()[1][-3000:]}"
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def uninterrupted(once_per_session):
    """The final weights of the job trained to EPOCHS without a fault (once per test session)."""
    def make(directory):
        done = job(directory / "logdir", "--weights", directory / "final.npy")
        assert done.returncode == 0, done.stderr[-3000:]

    return np.load(once_per_session("storage_faults_reference", make) / "final.npy")


@pytest.fixture
def in_process(tmp_path):
    """``train(epochs, **kw)`` of storage_fault_job in this process, on ``tmp_path/logdir``."""
    import storage_fault_job  # noqa: PLC0415 - the towers conftest puts this folder on sys.path

    logdir = str(tmp_path / "logdir")
    yield logdir, lambda epochs, **kw: storage_fault_job.train(logdir, epochs, **kw)
    unset_logger_dir()


# -- 1. a save that fails stops the run ---------------------------------------------------------
@contextlib.contextmanager
def small_filesystem(path, size):
    """A tmpfs of ``size`` mounted on ``path``; the test is skipped where it cannot be mounted."""
    path.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root; test_a_file_size_limit_... covers the fault anywhere")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}); "
                    "test_a_file_size_limit_... covers the fault anywhere")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)


def assert_stopped_at_a_failed_save(done, logdir, cause):
    """The run exited non-zero naming the checkpoint it could not write, the cause and the last
    good checkpoint, which is the newest on disk; it never claimed a later one as its latest."""
    assert done.returncode == 1, done.stderr[-3000:]
    saved = checkpoints(logdir)
    last_good = os.path.join(logdir, saved[-1])
    number = int(saved[-1].split("-")[1])
    assert f"StorageError: ModelSaver could not write the checkpoint {logdir}/model-{number + STEPS}: " \
           in done.stderr
    assert cause in done.stderr
    assert f"The last good checkpoint is {last_good}." in done.stderr
    assert "(latest)" not in done.stdout  # the closing summary was never printed
    assert number < EPOCHS * STEPS
    assert not glob.glob(os.path.join(logdir, "*_temp"))  # the failed save's partial files are gone
    assert tf.train.latest_checkpoint(logdir) == last_good
    return number


def test_disk_full_during_a_save_stops_the_run_naming_the_fault(tmp_path, uninterrupted):
    with small_filesystem(tmp_path / "small", "800k") as small:
        logdir = small / "logdir"
        done = job(logdir)
        number = assert_stopped_at_a_failed_save(done, logdir, "No space left on device")
        assert number == 3 * STEPS  # 800 KB hold three checkpoints of ~240 KB, not four
        moved = tmp_path / "moved"
        shutil.copytree(logdir, moved)  # the operator moves the run to a disk with space
    resumed = job(moved, "--weights", tmp_path / "final.npy")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming from {moved}/model-{number}" in resumed.stderr
    assert np.array_equal(np.load(tmp_path / "final.npy"), uninterrupted)


def test_a_file_size_limit_during_a_save_stops_the_run_naming_the_fault(tmp_path, uninterrupted):
    # runs anywhere: from epoch 3 no file may grow to a checkpoint's size (RLIMIT_FSIZE), so the
    # checkpoint of epoch 2 cannot be written, as on a full disk
    logdir = tmp_path / "logdir"
    done = job(logdir, "--file-size-limit-at-epoch", 3)
    assert assert_stopped_at_a_failed_save(done, logdir, "File too large") == STEPS
    resumed = job(logdir, "--weights", tmp_path / "final.npy")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert np.array_equal(np.load(tmp_path / "final.npy"), uninterrupted)


def test_the_stats_writer_follows_the_same_rule(in_process):
    logdir, train = in_process
    os.makedirs(os.path.join(logdir, "stats.jsonl"))  # cannot be written: a directory
    with pytest.raises(StorageError, match=rf"JSONWriter could not write a line of {logdir}/stats.jsonl: "
                                           r"IsADirectoryError.*The last good checkpoint is none"):
        train(2)
    # the run stopped at the end of epoch 1, whose checkpoint (written once every callback ran,
    # in after_train here) still went to the disk, which had room: nothing finished is lost
    assert checkpoints(logdir) == ["model-6"]


# -- 2. resume finds checkpoints by listing them -------------------------------------------------
def test_every_checkpoint_damaged_is_an_error_naming_each_and_nothing_is_deleted(tmp_path):
    logdir = tmp_path / "logdir"
    assert job(logdir, epochs=2).returncode == 0
    for data in glob.glob(str(logdir / "model-*.data-*")):
        with open(data, "r+b") as f:  # a disk that lost the end of each write
            f.truncate(os.path.getsize(data) // 2)
    before = snapshot(logdir)
    done = job(logdir)
    assert done.returncode == 1
    assert "ResumeError: AutoResumeTrainConfig:" in done.stderr
    assert "none of them can be read" in done.stderr
    for name in ("model-12", "model-6"):
        assert f"{logdir}/{name}: " in done.stderr
    assert snapshot(logdir) == before  # nothing overwritten, deleted or added
    assert epochs_in_stats(logdir) == [1, 2]


@pytest.mark.parametrize("fault", ["deleted", "cut off", "empty"])
def test_a_lost_state_file_is_rebuilt_and_the_run_resumes_exactly(in_process, uninterrupted, caplog, fault):
    logdir, train = in_process
    train(2)
    state = os.path.join(logdir, "checkpoint")
    if fault == "deleted":
        os.remove(state)
    else:
        with open(state, "r+") as f:
            f.truncate(0 if fault == "empty" else 40)  # mid-way through the second path
    assert load_loop_state(logdir)["global_step"] == 2 * STEPS  # the newest listed checkpoint
    with caplog.at_level(logging.INFO, logger="trainstack"):
        final = train(EPOCHS)
    problem = {"deleted": "missing", "cut off": "damaged", "empty": "empty"}[fault]
    assert f"the checkpoint state file of {logdir} is {problem}; using the checkpoints found" in caplog.text
    assert f"resuming from {logdir}/model-12 at epoch 3" in caplog.text
    assert f"the checkpoint state file of {logdir} was {problem}; rebuilt it" in caplog.text
    assert np.array_equal(final, uninterrupted)
    # the rebuilt state file knows every checkpoint, the old ones included, and none was lost
    state = tf.train.get_checkpoint_state(logdir)
    assert state.model_checkpoint_path == os.path.join(logdir, f"model-{EPOCHS * STEPS}")
    numbers = [STEPS * e for e in range(1, EPOCHS + 1)]
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [f"model-{n}" for n in numbers]
    assert checkpoints(logdir) == [f"model-{n}" for n in numbers]


# -- 3. one writer per log directory -------------------------------------------------------------
def test_a_second_run_on_a_live_directory_fails_at_once_naming_the_holder(tmp_path, uninterrupted):
    logdir, ready, go = tmp_path / "logdir", tmp_path / "ready", tmp_path / "go"
    first = job(logdir, "--hold-at-epoch", 3, "--ready", ready, "--go", go, "--weights", tmp_path / "first.npy",
                wait=False)
    try:
        wait_for(ready, first)
        holder = f"pid {first.pid} on host {socket.gethostname()}"
        second = job(logdir)
        assert second.returncode == 1
        assert "LogDirLockedError" in second.stderr and holder in second.stderr
        # the backup action does not move the live directory aside either
        with pytest.raises(LogDirLockedError, match=holder):
            set_logger_dir(str(logdir), action="b")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["logdir", "ready"]
        go.touch()
        out, err = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert first.returncode == 0, err[-3000:]
    assert epochs_in_stats(logdir) == list(range(1, EPOCHS + 1))  # the first run's lines only
    assert np.array_equal(np.load(tmp_path / "first.npy"), uninterrupted)
    assert_not_locked(logdir)


def test_a_run_killed_with_sigkill_holds_its_directory_no_longer(tmp_path, uninterrupted):
    logdir, ready, go = tmp_path / "logdir", tmp_path / "ready", tmp_path / "go"
    first = job(logdir, "--hold-at-epoch", 3, "--ready", ready, "--go", go, wait=False)
    wait_for(ready, first)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=600)
    assert first.returncode == -signal.SIGKILL
    assert_not_locked(logdir)
    resumed = job(logdir, "--weights", tmp_path / "final.npy")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert np.array_equal(np.load(tmp_path / "final.npy"), uninterrupted)


def test_the_lock_is_released_when_a_run_fails(in_process):
    logdir, train = in_process
    os.makedirs(os.path.join(logdir, "stats.jsonl"))
    with pytest.raises(StorageError):
        train(2)
    assert_not_locked(logdir)


def assert_not_locked(logdir):
    fd = os.open(os.path.join(logdir, LOCK_FILE), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises BlockingIOError when held
    finally:
        os.close(fd)


# -- 4. stats.jsonl: one rule, everywhere ---------------------------------------------------------
@pytest.mark.parametrize("damaged", ['{"epoch_num": 3, "global_st\n', '{"epoch_num": 3, "global_st'],
                         ids=["with-newline", "without-newline"])
def test_a_damaged_last_stats_line_is_dropped_at_resume(in_process, uninterrupted, caplog, damaged):
    logdir, train = in_process
    train(2)
    with open(os.path.join(logdir, "stats.jsonl"), "a") as f:
        f.write(damaged)
    with caplog.at_level(logging.WARNING, logger="trainstack"):
        train(4)
    assert f"{logdir}/stats.jsonl:3: dropping the damaged last line" in caplog.text
    assert epochs_in_stats(logdir) == [1, 2, 3, 4]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="trainstack"):
        final = train(EPOCHS)  # the next resume finds nothing to drop
    assert "damaged" not in caplog.text
    assert epochs_in_stats(logdir) == list(range(1, EPOCHS + 1))
    assert np.array_equal(final, uninterrupted)


def test_a_damaged_stats_line_before_the_last_is_an_error_naming_it(in_process):
    logdir, train = in_process
    train(2)
    path = os.path.join(logdir, "stats.jsonl")
    lines = Path(path).read_text().splitlines(keepends=True)
    Path(path).write_text(lines[0][:10] + "\n" + lines[1])
    before = Path(path).read_text()
    with pytest.raises(ValueError, match=r"stats\.jsonl:1: not valid JSON"):
        train(4)
    assert Path(path).read_text() == before


# -- 5. a kill inside a save -------------------------------------------------------------------
def test_a_kill_inside_a_save_leaves_a_temp_folder_the_next_start_removes(tmp_path, uninterrupted):
    logdir = tmp_path / "logdir"
    killed = job(logdir, "--kill-in-save", 3)
    assert killed.returncode == -signal.SIGKILL
    assert [os.path.basename(p) for p in glob.glob(str(logdir / "*_temp"))] == [f"model-{3 * STEPS}_temp"]
    resumed = job(logdir, "--weights", tmp_path / "final.npy")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"removed 1 temporary folder(s) left by an interrupted save: {logdir}/model-18_temp" in resumed.stderr
    assert not glob.glob(str(logdir / "*_temp"))
    assert np.array_equal(np.load(tmp_path / "final.npy"), uninterrupted)
