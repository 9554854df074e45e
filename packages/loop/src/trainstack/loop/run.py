"""The hooked-run protocol: what callbacks ask for around one step call.

Before a hooked run, each callback's ``before_run`` may return a
:class:`RunArgs`: names of values it wants fetched from the step ("fetches")
and values to pass into it ("feeds"). The step runs once with the union of
all requests, and each callback's ``after_run`` receives a :class:`RunValues`
holding exactly what it asked for, in the structure it asked for it.

How a step function takes feeds and returns named values is decided by the
step itself (see :func:`call_step`): plain Python callables take feeds as
keyword arguments and return a mapping of named values; framework layers
(TensorFlow's traced steps) implement :class:`FetchableStep`.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, Union, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    from .trainer import Trainer

__all__ = ["RunArgs", "RunValues", "RunContext", "FetchableStep", "call_step"]

_NO_FEEDS: Mapping[str, Any] = MappingProxyType({})
_NO_VALUES: Mapping[str, Any] = MappingProxyType({})

#: A fetch request: one name, a sequence of names, or a mapping key -> name.
Fetches = Union[None, str, Sequence[str], Mapping[Any, str]]  # noqa: UP007 (a runtime alias: `|` needs 3.10 types)


@dataclass(frozen=True)
class RunArgs:
    """What one callback asks of the next hooked run (tensorpack's ``SessionRunArgs``)."""

    fetches: Fetches = None
    feeds: Mapping[str, Any] = field(default_factory=dict)

    def fetch_names(self) -> list[str]:
        """The names in ``fetches``, flattened in order."""
        f = self.fetches
        if f is None:
            return []
        if isinstance(f, str):
            return [f]
        if isinstance(f, Mapping):
            names = list(f.values())
        elif isinstance(f, Sequence):
            names = list(f)
        else:
            raise TypeError(f"fetches must be a name, a sequence or a mapping of names, got {f!r}")
        bad = [n for n in names if not isinstance(n, str)]
        if bad:
            raise TypeError(f"fetches must be names (str), got {bad!r}")
        return names

    def pack(self, values: Mapping[str, Any]) -> Any:
        """Arrange fetched ``values`` (name -> value) in the structure of ``fetches``."""
        f = self.fetches
        if f is None:
            return None
        if isinstance(f, str):
            return values[f]
        if isinstance(f, Mapping):
            return {k: values[n] for k, n in f.items()}
        return [values[n] for n in f]


@dataclass(frozen=True)
class RunValues:
    """What one callback receives after a hooked run: ``results`` mirrors its fetches."""

    results: Any = None


class RunContext:
    """Passed to ``before_run`` / ``after_run``: the step being run and a way to stop."""

    def __init__(self, trainer: Trainer, step_fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.trainer = trainer
        self.step_fn = step_fn
        self.args = args

    def request_stop(self, reason: str = "a callback requested a stop") -> None:
        """Stop training cleanly before the next step (as raising StopTraining would)."""
        self.trainer.request_stop(reason)

    @property
    def stop_requested(self) -> bool:
        return self.trainer.loop.stop_requested


@runtime_checkable
class FetchableStep(Protocol):
    """A step that knows how to take feeds and return named values itself."""

    def run_with_fetches(self, args: tuple[Any, ...], fetches: Sequence[str],
                         feeds: Mapping[str, Any]) -> tuple[Any, Mapping[str, Any]]:
        """Run once; return ``(output, {name: value for name in fetches})``."""
        ...  # pragma: no cover


def call_step(fn: Callable[..., Any], args: tuple[Any, ...], fetches: Sequence[str] = (),
              feeds: Mapping[str, Any] = _NO_FEEDS) -> tuple[Any, Mapping[str, Any]]:
    """Run ``fn`` once with ``feeds``; return its output and the fetched values.

    A :class:`FetchableStep` handles both itself. A plain callable is called
    as ``fn(*args, **feeds)``, and fetches are looked up by name in the
    mapping it returns.
    """
    run_with_fetches = getattr(fn, "run_with_fetches", None)  # cheaper than isinstance(Protocol)
    if run_with_fetches is not None:
        output, values = run_with_fetches(args, tuple(fetches), feeds)
        return output, dict(values)
    if not feeds:
        output = fn(*args)
    else:
        output = fn(*args, **feeds)
    if not fetches:
        return output, _NO_VALUES
    if not isinstance(output, Mapping):
        raise TypeError(
            f"callbacks asked to fetch {list(fetches)} from step {_name(fn)}, which returned "
            f"{type(output).__name__}; a plain Python step must return a mapping of named values "
            "for its fetches to be read")
    missing = [n for n in fetches if n not in output]
    if missing:
        raise KeyError(f"step {_name(fn)} returned no value named {missing}; "
                       f"it returned {sorted(map(str, output))}")
    return output, {n: output[n] for n in fetches}


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)
