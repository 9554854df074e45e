"""tensorpack 0.11's ``tensorpack.utils.utils`` (``get_rng``, ``fix_rng_seed``: ``trainstack.dataflow``'s)."""
from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from trainstack.callbacks import logger
from trainstack.dataflow import fix_rng_seed, get_rng

from .._replaced import unprovided

__all__ = ["change_env", "get_rng", "fix_rng_seed", "get_tqdm", "execute_only_once", "humanize_time_delta"]


def humanize_time_delta(sec: float) -> str:
    """Seconds as tensorpack wrote them: ``61`` -> ``"1 minute 1 second"``, ``0.01`` -> ``"0.01 seconds"``."""
    if sec < 0:
        logger.warn("humanize_time_delta() obtains negative seconds!")
        return f"{sec:.3g} seconds"
    if sec == 0:
        return "0 second"
    time = datetime(2000, 1, 1) + timedelta(seconds=int(sec))
    units = ["day", "hour", "minute", "second"]
    vals: list[float] = [int(sec // 86400), time.hour, time.minute, time.second]
    if sec < 60:
        vals[-1] = sec
    return " ".join(f"{v:.3g} {u}{'s' if v > 1 else ''}" for v, u in zip(vals, units, strict=True) if v > 0)


@contextmanager
def change_env(name: str, val: str | None) -> Iterator[None]:
    """A block where the environment variable ``name`` is ``val`` (None: unset); restored when it ends,
    also by an error."""
    oldval = os.environ.get(name, None)
    if val is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = val
    try:
        yield
    finally:
        if oldval is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = oldval


_EXECUTE_HISTORY: set[tuple[str, int]] = set()


def execute_only_once() -> bool:
    """True the first time it is called from a given line of code, False afterwards."""
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    if caller is None:
        return True
    ident = (caller.f_code.co_filename, caller.f_lineno)
    if ident in _EXECUTE_HISTORY:
        return False
    _EXECUTE_HISTORY.add(ident)
    return True


def _pick_tqdm_interval(file: Any) -> float:
    if file.isatty():
        return 0.5
    if "SLURM_JOB_ID" in os.environ:
        return 60 if int(os.environ.get("SLURM_JOB_NUM_NODES", 1)) > 1 else 15
    if "OMPI_COMM_WORLD_SIZE" in os.environ:
        return 60
    return 180


def get_tqdm_kwargs(**kwargs: Any) -> dict[str, Any]:
    """tensorpack's tqdm options (refresh interval from ``$TENSORPACK_PROGRESS_REFRESH`` or the terminal)."""
    default: dict[str, Any] = dict(
        smoothing=0.5, dynamic_ncols=True, ascii=True,
        bar_format="{l_bar}{bar}|{n_fmt}/{total_fmt}[{elapsed}<{remaining},{rate_noinv_fmt}]")
    try:
        interval = float(os.environ["TENSORPACK_PROGRESS_REFRESH"])
    except KeyError:
        interval = _pick_tqdm_interval(kwargs.get("file", sys.stderr))
    default["mininterval"] = interval
    default.update(kwargs)
    return default


def get_tqdm(*args: Any, **kwargs: Any) -> Any:
    """``tqdm.tqdm(*args, **kwargs)`` with tensorpack's default options."""
    from tqdm import tqdm  # noqa: PLC0415 - a dependency of trainstack-callbacks, loaded when used

    return tqdm(*args, **get_tqdm_kwargs(**kwargs))


__getattr__ = unprovided(__name__)
