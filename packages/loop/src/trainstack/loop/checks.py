"""Argument checks shared by every trainstack layer: one rule, one error message.

Every constructor or function of trainstack that takes a count, an index or a size
checks it with :func:`check_int` (numbers: :func:`check_number`, flags: :func:`check_bool`),
so that all of them
accept the same values and say the same thing when given a wrong one::

    >>> check_int("RepeatedDataPoint", "num", 2.7, minimum=1)
    Traceback (most recent call last):
    ...
    trainstack.loop.checks.ArgumentError: RepeatedDataPoint(num=...) must be a positive integer, got 2.7

The rule for integers:

- any :class:`numbers.Integral` is accepted: ``int`` and NumPy integers (returned as ``int``);
- ``bool`` is refused (``True`` is an ``int`` to Python, never a count to a caller);
- every float is refused, an integral one (``2.0``) too: a float argument is usually a
  computed value (``n / 2``) that happens to be integral today, and truncating ``2.7``
  to 2 hides a bug. Pass ``int(x)`` where a float is meant;
- bounds are inclusive; ``none_ok=True`` also accepts (and returns) ``None``.

The rule for flags (:func:`check_bool`): ``True`` and ``False`` (and NumPy's booleans), nothing
else. ``"no"``, ``0`` or ``None`` are refused rather than read by their truth value:
``bool("no")`` is True.

:class:`ArgumentError`, raised for a wrong value, is both a ``ValueError`` and a
``TypeError``: code written against either of the errors the checks used to raise
keeps catching it.

Pure Python (this is the bottom layer): every layer, ``trainstack.dataflow`` included,
imports it.
"""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, Literal, cast, overload

__all__ = ["ArgumentError", "check_bool", "check_int", "check_number", "check_pair", "is_int"]


class ArgumentError(ValueError, TypeError):
    """An argument of the wrong type or out of range. Its message reads
    ``Owner(arg=...) must be <what was expected>, got <the value's repr>``."""

    # raised while tf.function (AutoGraph) traces, an error keeps its type only when AutoGraph can
    # rebuild it from its message, which it does when __init__ is Exception's
    if TYPE_CHECKING:
        def __init__(self, *args: object) -> None: ...
    else:
        __init__ = Exception.__init__


def is_int(value: Any, minimum: int | None = None, maximum: int | None = None) -> bool:
    """Whether ``value`` passes :func:`check_int` with these bounds (``None`` does not)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return False
    n = int(value)  # exact for an Integral; typeshed's Integral has no >= against an int
    return (minimum is None or n >= minimum) and (maximum is None or n <= maximum)


def _fail(owner: str, arg: str, expected: str, value: Any, none_ok: bool, note: str | None,
          error: type[Exception]) -> Exception:
    message = f"{owner}({arg}=...) must be {expected}{' or None' if none_ok else ''}, got {value!r}"
    return error(message + (f" ({note})" if note else ""))


def _expected_int(minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f"an integer in [{minimum}, {maximum}]"
    if maximum is not None:
        return f"an integer <= {maximum}"
    return {None: "an integer", 0: "a non-negative integer", 1: "a positive integer"}.get(
        minimum, f"an integer >= {minimum}")


@overload
def check_int(owner: str, arg: str, value: Any, *, minimum: int | None = ..., maximum: int | None = ...,
              none_ok: Literal[False] = ..., note: str | None = ...,
              error: type[Exception] = ...) -> int: ...
@overload
def check_int(owner: str, arg: str, value: Any, *, minimum: int | None = ..., maximum: int | None = ...,
              none_ok: bool, note: str | None = ..., error: type[Exception] = ...) -> int | None: ...
def check_int(owner: str, arg: str, value: Any, *, minimum: int | None = None,
              maximum: int | None = None, none_ok: bool = False, note: str | None = None,
              error: type[Exception] = ArgumentError) -> int | None:
    """``value`` as an ``int`` within ``[minimum, maximum]`` (each bound optional), or raise.

    ``owner`` and ``arg`` name the argument in the message, which reads
    ``Owner(arg=...) must be <expected>[ or None], got <value!r>[ (note)]``:
    ``minimum=1`` expects "a positive integer", ``minimum=0`` "a non-negative integer".
    With ``none_ok``, ``None`` is accepted and returned. ``note`` adds a hint in
    parentheses; ``error`` replaces :class:`ArgumentError` where a caller's documented
    error is another (e.g. a ``ValueError`` subclass of its own).
    See the module docstring for what counts as an integer.
    """
    if value is None and none_ok:
        return None
    if not is_int(value, minimum, maximum):
        raise _fail(owner, arg, _expected_int(minimum, maximum), value, none_ok, note, error)
    return int(value)


@overload
def check_bool(owner: str, arg: str, value: Any, *, none_ok: Literal[False] = ..., note: str | None = ...,
               error: type[Exception] = ...) -> bool: ...
@overload
def check_bool(owner: str, arg: str, value: Any, *, none_ok: bool, note: str | None = ...,
               error: type[Exception] = ...) -> bool | None: ...
def check_bool(owner: str, arg: str, value: Any, *, none_ok: bool = False, note: str | None = None,
               error: type[Exception] = ArgumentError) -> bool | None:
    """``value`` as a ``bool``, or raise: only ``True``/``False`` (NumPy's booleans too) are
    flags; the message reads ``Owner(arg=...) must be True or False, got <value!r>``. With
    ``none_ok``, ``None`` is accepted and returned."""
    if value is None and none_ok:
        return None
    kind = type(value)
    if isinstance(value, bool) or (kind.__module__ == "numpy" and kind.__name__ in ("bool_", "bool")):
        return bool(value)
    raise _fail(owner, arg, "True or False", value, none_ok, note, error)


def _expected_number(minimum: float | None, greater_than: float | None) -> str:
    if greater_than is not None:
        return "a positive number" if greater_than == 0 else f"a number > {greater_than}"
    if minimum is not None:
        return "a non-negative number" if minimum == 0 else f"a number >= {minimum}"
    return "a number"


def check_pair(owner: str, arg: str, value: Any, *, minimum: int | None = None) -> list[int]:
    """``[a, a]`` for an integer ``a``, ``[a, b]`` for a pair of integers (tensorpack's
    ``shape2d``: a kernel size, a stride, an image's ``(h, w)``), each at least ``minimum``.
    The integers follow :func:`check_int`'s rule; the message reads
    ``Owner(arg=...) must be <an integer> or a pair of them, got <value!r>``."""
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(is_int(v, minimum) for v in value):
        return [int(value[0]), int(value[1])]
    if is_int(value, minimum):
        return [int(value), int(value)]
    raise ArgumentError(f"{owner}({arg}=...) must be {_expected_int(minimum, None)} or a pair of them, "
                        f"got {value!r}")


@overload
def check_number(owner: str, arg: str, value: Any, *, minimum: float | None = ...,
                 greater_than: float | None = ..., none_ok: Literal[False] = ...,
                 note: str | None = ..., error: type[Exception] = ...) -> float: ...
@overload
def check_number(owner: str, arg: str, value: Any, *, minimum: float | None = ...,
                 greater_than: float | None = ..., none_ok: bool, note: str | None = ...,
                 error: type[Exception] = ...) -> float | None: ...
def check_number(owner: str, arg: str, value: Any, *, minimum: float | None = None,
                 greater_than: float | None = None, none_ok: bool = False, note: str | None = None,
                 error: type[Exception] = ArgumentError) -> float | None:
    """``value``, a real number (int, float, NumPy scalar; not a bool) ``>= minimum`` and
    ``> greater_than`` (each optional), returned unchanged; or raise as :func:`check_int`
    does. With a bound, NaN is refused; without one, any real number (NaN, inf) passes."""
    if value is None and none_ok:
        return None
    ok = not isinstance(value, bool) and isinstance(value, numbers.Real)
    if ok and minimum is not None:
        ok = value >= minimum
    if ok and greater_than is not None:
        ok = value > greater_than
    if not ok:
        raise _fail(owner, arg, _expected_number(minimum, greater_than), value, none_ok, note, error)
    return cast(float, value)  # checked above: a real number (int, float or a NumPy scalar), unchanged
