"""tensorpack 0.11's ``tensorpack.utils.debug``: print every Python function call."""
from __future__ import annotations

import sys
from types import FrameType
from typing import Any

from .._replaced import unprovided

__all__ = ["enable_call_trace"]


def enable_call_trace() -> None:
    """Print each Python function call (except ``write`` and ``print``) with its caller, via ``sys.settrace``."""
    def tracer(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        co = frame.f_code
        if co.co_name in ("write", "print"):
            return
        caller = frame.f_back
        if caller:
            print(f"Call to `{co.co_name}` on line {co.co_filename}:{frame.f_lineno} from "
                  f"{caller.f_code.co_filename}:{caller.f_lineno}")

    sys.settrace(tracer)


__getattr__ = unprovided(__name__)
