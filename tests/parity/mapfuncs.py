"""Map functions of the differential suite, in a module that imports neither tensorpack nor
trainstack: both libraries' worker processes import it by name, and start faster for it."""
from __future__ import annotations

from typing import Any


def double(dp: list) -> list:
    """A module-level map_func (both libraries can send it to a worker)."""
    return [dp[0] * 2, *dp[1:]]


def drop_odd(dp: list) -> list | None:
    return None if int(dp[0]) % 2 else dp


def identity(dp: Any) -> Any:
    return dp


def refuse_three(dp: list) -> list:
    if dp[0] == 3:
        raise ValueError("map_func refuses datapoint 3")
    return dp
