"""Argument checks shared by the callbacks' constructors."""
from __future__ import annotations

from numbers import Integral
from typing import Any


def check_int(owner: str, arg: str, value: Any, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum``, or a ValueError naming ``owner(arg=...)``.

    Any integral type is accepted (NumPy ints too); bools are refused.
    """
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        kind = {0: "a non-negative integer", 1: "a positive integer"}.get(
            minimum, f"an integer >= {minimum}")
        raise ValueError(f"{owner}({arg}=...) must be {kind}, got {value!r}")
    return int(value)
