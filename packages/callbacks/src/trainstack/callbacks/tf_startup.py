"""TensorFlow's start-up lines: imported once for trainstack, with its known chatter left out.

Importing TensorFlow prints, on the process's stderr and before ``TF_CPP_MIN_LOG_LEVEL`` is
read, absl's "All log messages before absl::InitializeLog()" banner, the oneDNN notice,
"Could not find cuda drivers" and the cpu_feature_guard note; TensorFlow 2.21 loads two
libraries that each print the first three, so a script shows them twice. The first device
query then adds a "failed call to cuInit" error on a machine without a CUDA driver.

The trainstack.callbacks package (the lowest layer with TensorFlow, imported first by every
layer above it) imports this module before anything else, and this module imports TensorFlow
and lists the GPUs with file descriptor 2 going to a temporary file; the file is then written
back to descriptor 2 without those lines (:func:`is_startup_line`). Everything else (errors,
Python warnings, any other line) is written back in its order, and all of it if the import
fails. Only the import and the device query are covered: nothing printed later is touched.

``TRAINSTACK_TF_LOGS=1`` in the environment (any value but empty or ``0``) switches the filter
off: TensorFlow prints as it always does. The filter cannot take back lines already printed:
a script that imports TensorFlow before trainstack gets the import's lines (the cuInit error is
kept then, its cause being out already): import trainstack before ``tensorflow`` and ``keras``.
While the filter runs, the lines of a crash that kills the process are lost with the file;
``TRAINSTACK_TF_LOGS=1`` shows them.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator

__all__ = ["TF_LOGS_ENV", "is_startup_line", "quiet_startup", "shows_tf_logs"]

#: the environment variable that switches the filter off
TF_LOGS_ENV = "TRAINSTACK_TF_LOGS"

_BANNER = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
# an absl line of TensorFlow's C++ code: "I0000 00:00:1795636910.445867   10531 port.cc:153] ..."
_ABSL_LINE = re.compile(r"(?P<severity>[IWEF])\d{4} [\d:.]+ +\d+ (?P<file>[\w.]+):\d+\] (?P<message>.*)")
# the informational start-up lines: (source file, start of the message)
_STARTUP_INFO = (
    ("port.cc", "oneDNN custom operations are on."),
    ("cudart_stub.cc", "Could not find cuda drivers on your machine, GPU will not be used."),
    ("cpu_feature_guard.cc", "This TensorFlow binary is optimized to use available CPU instructions"),
)
# cpu_feature_guard's message goes on over a second line without absl's prefix
_CPU_FEATURE_CONTINUATION = "To enable the following instructions:"
_NO_DRIVER = "Could not find cuda drivers"
_CUINIT_FAILED = ("cuda_platform.cc", "failed call to cuInit:")


def shows_tf_logs() -> bool:
    """Whether the environment switches the filter off (``TRAINSTACK_TF_LOGS`` set, not ``0``)."""
    return os.environ.get(TF_LOGS_ENV, "").strip() not in ("", "0")


def is_startup_line(line: str, previous: str = "", no_driver: bool = False) -> bool:
    """Whether ``line`` is one of TensorFlow's known start-up lines.

    ``previous`` is the line before it (the cpu_feature_guard note's second line has no
    prefix of its own). ``no_driver``: "Could not find cuda drivers" was printed, so a
    "failed call to cuInit" says no more than that; without it that error is kept.
    """
    if line.startswith(_BANNER):
        return True
    if line.startswith(_CPU_FEATURE_CONTINUATION):
        return is_startup_line(previous) and "cpu_feature_guard.cc" in previous
    match = _ABSL_LINE.match(line)
    if match is None:
        return False
    where, message = match["file"], match["message"]
    if match["severity"] in "IW" and any(where == f and message.startswith(m) for f, m in _STARTUP_INFO):
        return True
    return no_driver and match["severity"] == "E" and (where, message[:len(_CUINIT_FAILED[1])]) == _CUINIT_FAILED


def _without_startup_lines(text: str) -> str:
    kept: list[str] = []
    previous, no_driver = "", False
    for line in text.splitlines(keepends=True):
        no_driver = no_driver or _NO_DRIVER in line
        if not is_startup_line(line, previous, no_driver):
            kept.append(line)
        previous = line
    return "".join(kept)


@contextlib.contextmanager
def quiet_startup(enabled: bool = True) -> Iterator[None]:
    """Leave TensorFlow's start-up lines out of what the body prints to file descriptor 2.

    The body runs with descriptor 2 going to a temporary file, written back when it ends:
    without the start-up lines if it returns, whole if it raises. No descriptor is left
    open and descriptor 2 is restored in both cases. Does nothing when not ``enabled`` or
    when descriptor 2 is not open.
    """
    try:
        saved = os.dup(2) if enabled else None
    except OSError:  # no stderr at all (a daemon): nothing to filter
        saved = None
    if saved is None:
        yield
        return
    _flush_stderr()
    try:
        with tempfile.TemporaryFile() as captured:
            os.dup2(captured.fileno(), 2)
            failed = True
            try:
                yield
                failed = False
            finally:
                _flush_stderr()
                os.dup2(saved, 2)
                captured.seek(0)
                text = captured.read().decode(errors="replace")
                _write_all(2, (text if failed else _without_startup_lines(text)).encode())
    finally:
        os.close(saved)


def _flush_stderr() -> None:
    """Write out what Python holds for descriptor 2, before it is switched."""
    for stream in {id(s): s for s in (sys.stderr, sys.__stderr__)}.values():
        if stream is not None:  # None without a console (pythonw)
            stream.flush()


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def _import_tensorflow() -> None:
    """Import TensorFlow and list the GPUs (the first device query, where CUDA starts) with
    the start-up lines left out, unless ``TRAINSTACK_TF_LOGS`` says otherwise."""
    with quiet_startup(enabled=not shows_tf_logs()):
        import tensorflow as tf

        tf.config.list_physical_devices("GPU")


_import_tensorflow()
