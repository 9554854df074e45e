"""Quiet TensorFlow start-up for the examples: what ``TF_CPP_MIN_LOG_LEVEL`` cannot silence.

``with quiet_tensorflow_startup(): import tensorflow`` leaves TensorFlow's C++ start-up chatter out
of the process's stderr (the oneDNN notice, "Could not find cuda drivers", absl's banner, the
"failed call to cuInit" line of a machine without a GPU) and keeps everything else. The examples
use it when run as scripts; ``TF_CPP_MIN_LOG_LEVEL=0`` (or the main job's ``--verbose``) shows all.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator

__all__ = ["quiet_tensorflow_startup", "startup_chatter"]

# an absl log line of TensorFlow's C++ code: "I0000 00:00:1795636910.445867   10531 port.cc:153] ..."
_ABSL_LINE = re.compile(r"([IWEF])\d{4} [\d:.]+ +\d+ \S+:\d+\] (.*)")
_ABSL_SEVERITY = {"I": 0, "W": 1, "E": 2, "F": 3}  # TF_CPP_MIN_LOG_LEVEL's numbers


@contextlib.contextmanager
def quiet_tensorflow_startup(enabled: bool = True) -> Iterator[None]:
    """Leave TensorFlow's C++ start-up messages out of what the body prints to stderr.

    ``TF_CPP_MIN_LOG_LEVEL`` (set to 2 unless the environment sets it) silences
    TensorFlow's C++ INFO and WARNING lines, but not all of them: the oneDNN
    notice and "Could not find cuda drivers" are logged while TensorFlow's
    shared libraries load, before that setting is read, together with absl's
    "All log messages before absl::InitializeLog()" banner. So the body (the
    imports) runs with the process's stderr going to a file, the first device
    query included (CUDA starts there and, on a machine without a GPU, logs a
    "failed call to cuInit" error, which says no more than "no GPU"). Then the
    file is written back without those lines: everything else (Python warnings,
    TensorFlow's messages at or above the level) still shows, all of it does
    if the body raises, and nothing is left out at level 0. (A crash that kills
    the process takes the file with it; ``--verbose`` shows it all as it comes.)
    """
    if not enabled:
        yield
        return
    level = os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2").strip()
    min_level = int(level) if level.isdigit() else 0  # as TensorFlow reads it
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        failed = True
        try:
            yield
            if "tensorflow" in sys.modules:
                sys.modules["tensorflow"].config.list_physical_devices("GPU")
            failed = False
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            lines = captured.read().decode(errors="replace").splitlines(keepends=True)
            sys.stderr.write("".join(lines if failed else [x for x in lines if not startup_chatter(x, min_level)]))
            sys.stderr.flush()


def startup_chatter(line: str, min_level: int) -> bool:
    """Whether ``line`` is one of the start-up lines ``quiet_tensorflow_startup`` leaves out."""
    if min_level <= 0:  # TF_CPP_MIN_LOG_LEVEL=0: the user asked for everything
        return False
    if line.startswith("WARNING: All log messages before absl::InitializeLog() is called"):
        return True
    match = _ABSL_LINE.match(line)
    return bool(match) and (_ABSL_SEVERITY[match[1]] < min_level or "failed call to cuInit" in match[2])
