"""trainstack.loop.checks: the one argument checker every layer uses."""
from __future__ import annotations

import fractions
import numbers
import re

import pytest

import trainstack.loop
from trainstack.loop.checks import ArgumentError, check_bool, check_int, check_number, check_pair, is_int


class IntLike:
    """An integral type that is not int (as NumPy's are): registered with numbers.Integral."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __int__(self) -> int:
        return self.value

    __index__ = __int__

    def __ge__(self, other: int) -> bool:
        return self.value >= other

    def __le__(self, other: int) -> bool:
        return self.value <= other


numbers.Integral.register(IntLike)


def test_exported_from_the_package():
    assert trainstack.loop.check_int is check_int and trainstack.loop.ArgumentError is ArgumentError
    assert {"ArgumentError", "check_int", "check_number", "is_int"} <= set(trainstack.loop.__all__)


@pytest.mark.parametrize("value, kwargs, expected", [
    (3, {}, 3),
    (0, {"minimum": 0}, 0),
    (-1, {"minimum": -1}, -1),
    (5, {"minimum": 1, "maximum": 5}, 5),
    (IntLike(4), {"minimum": 1}, 4),
    (None, {"none_ok": True}, None),
    (None, {"minimum": 1, "none_ok": True}, None),
])
def test_accepted_values_come_back_as_int(value, kwargs, expected):
    result = check_int("Owner", "arg", value, **kwargs)
    assert result == expected and type(result) is type(expected)


def test_numpy_integers_are_accepted_as_int():
    np = pytest.importorskip("numpy")  # the loop itself imports no NumPy; its tests may
    result = check_int("Owner", "arg", np.int64(7), minimum=1)
    assert result == 7 and type(result) is int
    assert check_int("Owner", "arg", np.uint8(0), minimum=0) == 0
    with pytest.raises(ArgumentError):
        check_int("Owner", "arg", np.float64(2.0))
    with pytest.raises(ArgumentError):
        check_int("Owner", "arg", np.bool_(True))


@pytest.mark.parametrize("value, kwargs, expected", [
    (2.7, {"minimum": 1}, "a positive integer"),
    (2.0, {"minimum": 1}, "a positive integer"),  # integral floats are refused too
    (True, {"minimum": 1}, "a positive integer"),
    (False, {"minimum": 0}, "a non-negative integer"),
    ("3", {}, "an integer"),
    (None, {}, "an integer"),
    (0, {"minimum": 1}, "a positive integer"),
    (-1, {"minimum": 0}, "a non-negative integer"),
    (1, {"minimum": 2}, "an integer >= 2"),
    (-2, {"minimum": -1}, "an integer >= -1"),
    (6, {"maximum": 5}, "an integer <= 5"),
    (6, {"minimum": 0, "maximum": 5}, "an integer in [0, 5]"),
    (fractions.Fraction(3, 1), {}, "an integer"),
    (float("nan"), {"minimum": 0}, "a non-negative integer"),
])
def test_refused_values_name_owner_argument_expectation_and_value(value, kwargs, expected):
    with pytest.raises(ArgumentError) as info:
        check_int("Owner", "arg", value, **kwargs)
    assert str(info.value) == f"Owner(arg=...) must be {expected}, got {value!r}"
    assert not is_int(value, kwargs.get("minimum"), kwargs.get("maximum"))


def test_none_ok_and_note_are_in_the_message():
    with pytest.raises(ArgumentError, match=re.escape(
            "Owner(size=...) must be a positive integer or None, got 0 (datapoints per pass)")):
        check_int("Owner", "size", 0, minimum=1, none_ok=True, note="datapoints per pass")


def test_the_error_is_both_a_value_error_and_a_type_error():
    # the checks it replaces raised one or the other; callers catching either keep working
    assert issubclass(ArgumentError, ValueError) and issubclass(ArgumentError, TypeError)
    for catch in (ValueError, TypeError):
        with pytest.raises(catch):
            check_int("Owner", "arg", "x")
        with pytest.raises(catch):
            check_int("Owner", "arg", -1, minimum=0)


def test_a_caller_may_raise_its_own_error_class():
    class SpecError(ValueError):
        pass

    with pytest.raises(SpecError, match=re.escape("Spec(index=...) must be an integer, got '1'")):
        check_int("Spec", "index", "1", error=SpecError)


def test_is_int():
    assert is_int(0) and is_int(3, 1, 3) and not is_int(4, 1, 3) and not is_int(True)
    assert not is_int(None) and not is_int(1.0) and not is_int("1")


@pytest.mark.parametrize("value, kwargs", [
    (0.5, {}), (2, {}), (float("inf"), {}), (float("nan"), {}),
    (0, {"minimum": 0}), (1e-9, {"greater_than": 0}), (fractions.Fraction(1, 2), {"minimum": 0}),
])
def test_check_number_accepts_and_returns_real_numbers(value, kwargs):
    result = check_number("Owner", "arg", value, **kwargs)
    assert result is value


@pytest.mark.parametrize("value, kwargs, expected", [
    (True, {}, "a number"),
    ("1", {}, "a number"),
    (None, {}, "a number"),
    (1j, {}, "a number"),
    (-0.1, {"minimum": 0}, "a non-negative number"),
    (float("nan"), {"minimum": 0}, "a non-negative number"),
    (0, {"greater_than": 0}, "a positive number"),
    (0.5, {"minimum": 1}, "a number >= 1"),
    (1, {"greater_than": 1}, "a number > 1"),
])
def test_check_number_refuses_with_the_same_wording(value, kwargs, expected):
    with pytest.raises(ArgumentError) as info:
        check_number("Owner", "arg", value, **kwargs)
    assert str(info.value) == f"Owner(arg=...) must be {expected}, got {value!r}"


def test_check_number_none_ok():
    assert check_number("Owner", "arg", None, greater_than=0, none_ok=True) is None
    with pytest.raises(ArgumentError, match=re.escape("must be a positive number or None, got -1")):
        check_number("Owner", "arg", -1, greater_than=0, none_ok=True)


@pytest.mark.parametrize("value, expected", [(3, [3, 3]), ((2, 5), [2, 5]), ([4, 1], [4, 1])])
def test_check_pair_gives_tensorpacks_shape2d(value, expected):
    assert check_pair("Conv2D", "kernel_size", value, minimum=1) == expected


@pytest.mark.parametrize("value", [2.0, True, (2, 2.5), (1, 2, 3), (0, 3), "3", None])
def test_check_pair_refuses_what_is_not_one_or_two_integers(value):
    with pytest.raises(ArgumentError, match=re.escape(
            f"Conv2D(kernel_size=...) must be a positive integer or a pair of them, got {value!r}")):
        check_pair("Conv2D", "kernel_size", value, minimum=1)


@pytest.mark.parametrize("value", [True, False])
def test_check_bool_returns_the_flag(value):
    assert check_bool("SimpleTrainer", "xla_compile", value) is value


def test_check_bool_accepts_numpy_booleans_as_bool():
    np = pytest.importorskip("numpy")
    assert check_bool("X", "flag", np.bool_(True)) is True
    assert check_bool("X", "flag", np.array(False)[()]) is False


@pytest.mark.parametrize("value", ["no", "yes", "", 0, 1, 1.0, None, [], [True]])
def test_check_bool_refuses_anything_but_a_flag_naming_owner_argument_and_value(value):
    with pytest.raises(ArgumentError, match=re.escape(f"SimpleTrainer(xla_compile=...) must be True or False, "
                                                      f"got {value!r}")):
        check_bool("SimpleTrainer", "xla_compile", value)


def test_check_bool_none_ok_and_own_error():
    assert check_bool("X", "flag", None, none_ok=True) is None
    with pytest.raises(ArgumentError, match=r"must be True or False or None, got 'no' \(a hint\)"):
        check_bool("X", "flag", "no", none_ok=True, note="a hint")

    class MyError(ValueError):
        pass

    with pytest.raises(MyError):
        check_bool("X", "flag", "no", error=MyError)
    assert trainstack.loop.check_bool is check_bool and "check_bool" in trainstack.loop.__all__
