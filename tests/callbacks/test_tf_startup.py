"""quiet_startup, the filter trainstack puts around its import of TensorFlow: on file descriptor 2,
the known start-up lines go; everything else comes back whole and in order; nothing is left open."""
from __future__ import annotations

import os
import sys

import pytest

from trainstack.callbacks.tf_startup import quiet_startup, shows_tf_logs

BANNER = b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
ONEDNN = b"I0000 00:00:1795636910.445867   10531 port.cc:153] oneDNN custom operations are on.\n"
ERROR = b"E0000 00:00:1795636913.997988   10531 op_kernel.cc:9] a real error\n"


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_only_the_start_up_lines_go_and_the_rest_keeps_its_order(capfd):
    before = open_fds()
    with quiet_startup():
        os.write(2, BANNER + b"the user's line\n" + ONEDNN + ERROR)
        print("a Python warning", file=sys.__stderr__)  # descriptor 2 (pytest replaces sys.stderr)
        os.write(2, BANNER + ONEDNN + b"no newline at the end")
    assert capfd.readouterr().err == ("the user's line\n" + ERROR.decode() + "a Python warning\n"
                                      "no newline at the end")
    assert open_fds() == before


def test_everything_comes_back_when_the_body_raises_and_nothing_when_disabled(capfd):
    before = open_fds()
    with pytest.raises(ImportError), quiet_startup():
        os.write(2, BANNER + ONEDNN)
        raise ImportError("tensorflow")
    assert capfd.readouterr().err == (BANNER + ONEDNN).decode()
    with quiet_startup(enabled=False):
        os.write(2, ONEDNN)
        assert capfd.readouterr().err == ONEDNN.decode()  # as it came, not held back
    assert open_fds() == before


@pytest.mark.parametrize(("value", "shows"), [(None, False), ("", False), ("0", False), ("1", True), ("yes", True)])
def test_trainstack_tf_logs_switches_the_filter_off(monkeypatch, value, shows):
    monkeypatch.delenv("TRAINSTACK_TF_LOGS", raising=False)
    if value is not None:
        monkeypatch.setenv("TRAINSTACK_TF_LOGS", value)
    assert shows_tf_logs() is shows
