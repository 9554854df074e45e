"""One writer per directory: an advisory lock held by the run that writes there.

Two runs writing checkpoints and ``stats.jsonl`` into one directory interleave their files
with nothing to tell them apart. So the run's writers (the savers, ``JSONWriter``,
``TFEventWriter``) take an exclusive ``fcntl.flock`` on ``<directory>/.trainstack.lock``
when they are set up, before they write anything, and let go of it when training ends. The
file records the holder's pid and host; a second run's writer fails at once with
:class:`LogDirLockedError` naming them. ``set_logger_dir``'s ``backup`` and ``delete`` actions
take the same lock before moving or deleting a directory, so a directory another live run
holds is never touched.

The writers of one process share one lock per directory (a second ``flock`` in the same process
would conflict with the first); each holds its share through a :class:`WriterLock`. The kernel
releases a flock when its process ends, however it ends (kill -9 included), so a lock never
outlives its run; the hidden file stays, empty. The processes of one multi-process run (Horovod
ranks) share the chief's logger directory, but only the chief writes there: a writer takes the
lock when it is set up on the chief (``trainer.is_chief``), or in ``before_train`` on a process
that becomes the chief later (elastic training). Without ``fcntl`` (Windows) nothing is locked.
"""
from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Iterator

from .storage import StorageError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_FILE", "LogDirLockedError", "DirectoryLock", "WriterLock", "hold_directory",
           "release_directory", "release_all", "exclusive_directory"]

logger = logging.getLogger("trainstack.callbacks")

#: The lock file's name in a locked directory (hidden: it does not make a directory "non-empty").
LOCK_FILE = ".trainstack.lock"


class LogDirLockedError(RuntimeError):
    """Another live run holds the directory: ``holder`` says which (its pid and host)."""

    def __init__(self, directory: str, holder: str, doing: str) -> None:
        self.directory, self.holder = directory, holder
        super().__init__(
            f"{doing}: {directory} is in use by another run ({holder}), which holds its lock "
            f"{os.path.join(directory, LOCK_FILE)}. Nothing was written or moved. Wait for that run to "
            "end, or give this run another directory (set_logger_dir(dirname, action='n') makes a "
            "new one).")


class DirectoryLock:
    """An exclusive, non-blocking ``fcntl.flock`` on ``<directory>/.trainstack.lock``."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = os.path.realpath(os.fspath(directory))
        self.path = os.path.join(self.directory, LOCK_FILE)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, doing: str) -> None:
        """Take the lock, or raise :class:`LogDirLockedError` (``doing`` opens its message)."""
        if fcntl is None or self._fd is not None:
            return
        os.makedirs(self.directory, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise LogDirLockedError(self.directory, holder, doing) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on host {socket.gethostname()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Let go of the lock (the file stays, emptied)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)
        except OSError:  # a full or vanished directory must not keep the lock
            pass
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _read_holder(fd: int) -> str:
    text = os.pread(fd, 256, 0).decode("utf-8", "replace").strip()
    return text or "pid and host not recorded yet"


# -- the writers' shared locks: directory -> (lock, number of writers holding it) ------------
_held: dict[str, tuple[DirectoryLock, int]] = {}


def hold_directory(directory: str | os.PathLike, who: str) -> None:
    """Take (or share, within this process) the lock of ``directory`` for writer ``who``; raises
    :class:`LogDirLockedError` when another process holds it. Pair with :func:`release_directory`."""
    lock = DirectoryLock(directory)
    current = _held.get(lock.directory)
    if current is None:
        lock.acquire(f"{who} cannot write into {lock.directory}")
        _held[lock.directory] = (lock, 1)
        logger.debug("%s holds the lock of %s", who, lock.directory)
    else:
        _held[lock.directory] = (current[0], current[1] + 1)


def release_directory(directory: str | os.PathLike) -> None:
    """One writer is done with ``directory``; the last one releases its lock."""
    key = os.path.realpath(os.fspath(directory))
    current = _held.get(key)
    if current is None:
        return
    lock, count = current
    if count > 1:
        _held[key] = (lock, count - 1)
    else:
        del _held[key]
        lock.release()


class WriterLock:
    """One writer's share of its directory's lock: taken at most once, given back at most once."""

    def __init__(self, who: str) -> None:
        self.who = who
        self.directory: str | None = None

    @property
    def held(self) -> bool:
        return self.directory is not None

    def take(self, directory: str | os.PathLike) -> None:
        """Hold ``directory``'s lock (:func:`hold_directory`) unless this writer holds it already.
        A lock file that cannot be made (the directory is a file, read-only, ...) is a storage
        error, which stops the run as any failed write does."""
        if self.directory is None:
            try:
                hold_directory(directory, self.who)
            except OSError as e:
                path = os.path.join(os.fspath(directory), LOCK_FILE)
                raise StorageError(self.who, "the lock file", path, e, directory) from e
            self.directory = os.fspath(directory)

    def give_back(self) -> None:
        """Give the share back (:func:`release_directory`); nothing when none is held."""
        directory, self.directory = self.directory, None
        if directory is not None:
            release_directory(directory)


def release_all() -> None:
    """Release every lock this process holds (``unset_logger_dir``: between runs, in tests)."""
    while _held:
        _, (lock, _) = _held.popitem()
        lock.release()


@contextlib.contextmanager
def exclusive_directory(directory: str | os.PathLike, doing: str) -> Iterator[None]:
    """Hold ``directory``'s lock for the time of the block (to move or delete it), unless this
    process holds it already or no run ever wrote there (no lock file: none is left behind);
    raises :class:`LogDirLockedError` when another run holds it."""
    lock = DirectoryLock(directory)
    if lock.directory in _held or not os.path.exists(lock.path):
        yield
        return
    lock.acquire(doing)
    try:
        yield
    finally:
        lock.release()
