"""The differential suite, single-process dataflows: the same pipelines through tensorpack 0.11's
``tensorpack.dataflow`` and ``trainstack.dataflow``, comparing what a user observes (datapoints
and their order, ``len()`` and what it raises, ``reset_state`` requirements, seeding).

Where trainstack is deliberately different, the test asserts the documented behaviour of each
(packages/dataflow/README.md, "Differences from tensorpack").
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from pipelines import LIBS, ids, observe, outcome, passes, seeded, take, tp, ts  # noqa: E402


def both(build):
    """``build(lib)`` for each library: {name: result}."""
    return {name: build(lib) for name, lib in LIBS.items()}


def reset(ds):
    ds.reset_state()
    return ds


def assert_same(build, observe_fn):
    """The observation of the pipeline ``build(lib)`` is the same in both libraries."""
    got = {name: observe_fn(ds) for name, ds in both(build).items()}
    assert got["trainstack"] == got["tensorpack"]
    return got["tensorpack"]


def assert_same_len(ds_by_lib):
    """``len()`` is the same number in both, or raises in both, trainstack's error being an
    instance of tensorpack's error's class (so an ``except`` written for tensorpack catches it)."""
    got = {name: outcome(lambda ds=ds: len(ds)) for name, ds in ds_by_lib.items()}
    (tp_kind, tp_value), (ts_kind, ts_value) = got["tensorpack"], got["trainstack"]
    assert ts_kind == tp_kind, got
    if tp_kind == "ok":
        assert ts_value == tp_value
    else:
        assert isinstance(ts_value, type(tp_value)), got
    return got["tensorpack"]


# --- sources, seeds ---------------------------------------------------------------------------

@pytest.mark.parametrize("shuffle", [False, True])
def test_data_from_list_gives_the_same_passes_with_a_fixed_seed(shuffle):
    with seeded(1234):
        out = assert_same(lambda lib: reset(lib.DataFromList(ids(12), shuffle=shuffle)), lambda ds: passes(ds, 3))
    if shuffle:
        assert out[0] != out[1] and sorted(out[0]) == sorted(out[1])  # reshuffled every pass
    else:
        assert out[0] == [observe(dp) for dp in ids(12)]


def test_without_a_fixed_seed_two_instances_shuffle_differently_in_both():
    for lib in LIBS.values():
        a, b = (reset(lib.DataFromList(ids(30))) for _ in range(2))
        assert passes(a, 1) != passes(b, 1)


def test_fake_data_draws_the_same_arrays_with_a_fixed_seed():
    for random in (True, False):
        with seeded(7):
            out = assert_same(
                lambda lib: reset(lib.FakeData([[2, 3], [4]], size=5, random=random, dtype=["float32", "int32"],
                                               domain=[(0, 1), (0, 100)])), lambda ds: passes(ds, 2))
        assert out[0][0][1][1] == "<f4" and out[0][0][2][1] == "<i4"
        assert (out[0][0] == out[0][1]) == (not random)


def test_old_get_data_and_size_spellings_work_in_both():
    def build(lib):
        class Old(lib.DataFlow):
            def get_data(self):
                yield from ids(3)

            def size(self):
                return 3
        return Old()
    assert assert_same(build, lambda ds: (len(ds), ds.size(), passes(ds, 1), list(map(observe, ds.get_data()))))[0] == 3


# --- len() and when it raises -------------------------------------------------------------------

def gen():
    yield from ids(4)


LEN_CASES = {
    "list": lambda lib: lib.DataFromList(ids(5)),
    "generator function": lambda lib: lib.DataFromGenerator(gen),
    "iterable with len": lambda lib: lib.DataFromIterable(ids(6)),
    "iterable without len": lambda lib: lib.DataFromIterable(gen()),
    "map over unsized": lambda lib: lib.MapData(lib.DataFromGenerator(gen), lambda dp: dp),
    "repeated 3": lambda lib: lib.RepeatedData(lib.DataFromList(ids(5)), 3),
    "repeated forever": lambda lib: lib.RepeatedData(lib.DataFromList(ids(5)), -1),
    "repeated datapoint": lambda lib: lib.RepeatedDataPoint(lib.DataFromList(ids(5)), 2),
    "batch remainder": lambda lib: lib.BatchData(lib.DataFromList(ids(7)), 3, remainder=True),
    "batch no remainder": lambda lib: lib.BatchData(lib.DataFromList(ids(7)), 3),
    "batch exact": lambda lib: lib.BatchData(lib.DataFromList(ids(6)), 3, remainder=True),
    "batch over unsized": lambda lib: lib.BatchData(lib.DataFromIterable(gen()), 2),
    "concat": lambda lib: lib.ConcatData([lib.DataFromList(ids(2)), lib.DataFromList(ids(5))]),
    "concat with unsized": lambda lib: lib.ConcatData([lib.DataFromList(ids(2)), lib.DataFromGenerator(gen)]),
    "join unequal": lambda lib: lib.JoinData([lib.DataFromList(ids(2)), lib.DataFromList(ids(5))]),
    "fixed size": lambda lib: lib.FixedSizeData(lib.DataFromGenerator(gen), 9),
    "locally shuffled": lambda lib: lib.LocallyShuffleData(lib.DataFromList(ids(5)), 4, num_reuse=2),
    "cache": lambda lib: lib.CacheData(lib.DataFromList(ids(4))),
    "select": lambda lib: lib.SelectComponent(lib.DataFromList(ids(4)), [1]),
    "fake": lambda lib: lib.FakeData([[1]], size=11),
}


@pytest.mark.parametrize("case", sorted(LEN_CASES))
def test_len_is_the_same_or_raises_the_same(case):
    assert_same_len(both(LEN_CASES[case]))


def test_len_raises_not_implemented_error_where_tensorpack_does():
    for case in ("iterable without len", "repeated forever"):
        kind, error = assert_same_len(both(LEN_CASES[case]))
        assert kind == "raises" and isinstance(error, NotImplementedError)
    # tensorpack's DataFromGenerator calls len() of the generator: a TypeError; trainstack's
    # SizeUnknownError is a TypeError and a NotImplementedError
    kind, error = assert_same_len(both(LEN_CASES["generator function"]))
    assert kind == "raises" and type(error) is TypeError


# --- reset_state requirements -------------------------------------------------------------------

def test_iterating_a_shuffling_dataflow_before_reset_state():
    # tensorpack: AttributeError from its rng None; trainstack: a RuntimeError naming reset_state
    with pytest.raises(AttributeError):
        list(tp.DataFromList(ids(3)))
    with pytest.raises(RuntimeError, match=r"reset_state\(\)"):
        list(ts.DataFromList(ids(3)))
    with pytest.raises(RuntimeError, match=r"reset_state\(\)"):
        next(iter(ts.LocallyShuffleData(ts.DataFromList(ids(3), shuffle=False), 2)))
    # no rng needed: both iterate
    assert_same(lambda lib: lib.DataFromList(ids(3), shuffle=False), lambda ds: passes(ds, 1))


@pytest.mark.parametrize("name", ["FixedSizeData", "CacheData"])
def test_dataflows_that_tensorpack_cannot_iterate_before_reset_state_work_in_trainstack(name):
    make = {"FixedSizeData": lambda lib: lib.FixedSizeData(lib.DataFromList(ids(4), shuffle=False), 3),
            "CacheData": lambda lib: lib.CacheData(lib.DataFromList(ids(4), shuffle=False))}[name]
    with pytest.raises(AttributeError, match="_guard"):
        list(make(tp))
    assert passes(make(ts), 1) == passes(reset(make(tp)), 1)


# --- BatchData ----------------------------------------------------------------------------------

@pytest.mark.parametrize("remainder", [False, True])
@pytest.mark.parametrize("use_list", [False, True])
def test_batch_data_lists_and_dicts(remainder, use_list):
    lists = [[np.arange(3, dtype=np.float16) + k, np.int64(k), k, float(k) / 2] for k in range(7)]
    dicts = [{"image": np.full((2, 2), k, np.uint8), "label": k, "weight": 0.5 * k} for k in range(7)]
    for data in (lists, dicts):
        out = assert_same(lambda lib: lib.BatchData(lib.DataFromList(data, shuffle=False), 3, remainder=remainder,
                                                    use_list=use_list), lambda ds: (len(ds), passes(ds, 2)))
        assert out[0] == (3 if remainder else 2) == len(out[1][0])


def test_batch_data_dtypes_of_python_components():
    # ints -> int32, floats -> float32, str -> unicode, as in tensorpack
    data = [[k, k + 0.5, f"s{k}"] for k in range(4)]
    out = assert_same(lambda lib: lib.BatchData(lib.DataFromList(data, shuffle=False), 2), lambda ds: passes(ds, 1))
    assert [c[1] for c in out[0][0][1:]] == ["<i4", "<f4", "<U2"]


def test_batch_data_bools_and_bytes_keep_their_type_in_trainstack():
    # tensorpack batches Python bools as int32 (its bool branch comes after the int one) and
    # bytes as unicode; trainstack keeps bool and bytes
    data = [[k % 2 == 0, b"b%d" % k] for k in range(4)]
    got = both(lambda lib: next(iter(lib.BatchData(lib.DataFromList(data, shuffle=False), 4))))
    assert [got["tensorpack"][0].dtype.str, got["tensorpack"][1].dtype.str] == ["<i4", "<U2"]
    assert [got["trainstack"][0].dtype.str, got["trainstack"][1].dtype.str] == ["|b1", "|S2"]
    assert got["trainstack"][0].tolist() == got["tensorpack"][0].astype(bool).tolist()
    assert [b.decode() for b in got["trainstack"][1].tolist()] == got["tensorpack"][1].tolist()


def test_batch_data_argument_and_shape_errors():
    # a batch larger than the dataflow with remainder=False: tensorpack asserts, trainstack says why
    with pytest.raises(AssertionError):
        tp.BatchData(tp.DataFromList(ids(2)), 3)
    with pytest.raises(ValueError, match="batch_size 3 is larger than the 2 datapoints"):
        ts.BatchData(ts.DataFromList(ids(2)), 3)
    # over a DataFromGenerator, whose len() raises TypeError: tensorpack's BatchData fails at
    # construction (it expects NotImplementedError); trainstack's accepts it (len then raises)
    with pytest.raises(TypeError):
        tp.BatchData(tp.DataFromGenerator(gen), 2)
    batched = ts.BatchData(ts.DataFromGenerator(gen), 2)
    assert [observe(b) for b in batched] == passes(tp.BatchData(tp.DataFromIterable(list(gen())), 2), 1)[0]
    # components of different shapes: tensorpack logs and yields None for the component (not
    # run here: it would also open an IPython shell when IPython is installed); trainstack raises
    ragged = [[np.zeros(k + 1)] for k in range(2)]
    with pytest.raises(ValueError, match=r"cannot stack component 0 of 2 datapoints .*shapes \[\(1,\), \(2,\)\]"):
        list(ts.BatchData(ts.DataFromList(ragged, shuffle=False), 2))


# --- MapData, MapDataComponent, SelectComponent ---------------------------------------------------

def test_map_data_dropping_none_and_len_as_upper_bound():
    out = assert_same(lambda lib: lib.MapData(lib.DataFromList(ids(9), shuffle=False),
                                              lambda dp: None if dp[0] % 3 else [dp[1], dp[0]]),
                      lambda ds: (len(ds), passes(ds, 2)))
    assert out[0] == 9 and len(out[1][0]) == 3


def test_map_data_component_by_index_and_key():
    out = assert_same(lambda lib: lib.MapDataComponent(lib.DataFromList(ids(6), shuffle=False),
                                                       lambda c: None if c == 30 else -c, index=1),
                      lambda ds: passes(ds, 1))
    assert len(out[0]) == 5
    dicts = [{"a": k, "b": (k, k)} for k in range(3)]
    assert_same(lambda lib: lib.MapDataComponent(lib.DataFromList(dicts, shuffle=False), lambda c: c * 2, "a"),
                lambda ds: passes(ds, 1))
    tuples = [(k, k) for k in range(3)]  # a tuple datapoint comes back as a list in both
    out = assert_same(lambda lib: lib.MapDataComponent(lib.DataFromList(tuples, shuffle=False), str),
                      lambda ds: passes(ds, 1))
    assert out[0][0][0] == "list"


def test_map_data_gives_a_shallow_copy_in_both():
    for lib in LIBS.values():
        data = [[np.zeros(2), 0] for _ in range(2)]

        def mutate(dp):
            dp[1] = 5       # replaced in the copy only
            dp[0] += 1      # the same array: changed in the source too
            return dp
        list(lib.MapData(lib.DataFromList(data, shuffle=False), mutate))
        assert [dp[1] for dp in data] == [0, 0] and data[0][0].tolist() == [1, 1]


def test_select_component():
    assert_same(lambda lib: lib.SelectComponent(lib.DataFromList(ids(4), shuffle=False), [1, 0, 1]),
                lambda ds: passes(ds, 1))


# --- repeating, resizing, concatenating, joining -------------------------------------------------

def test_repeated_data_forever_and_finite():
    assert_same(lambda lib: lib.RepeatedData(lib.DataFromList(ids(4), shuffle=False), -1), lambda ds: take(ds, 13))
    assert_same(lambda lib: lib.RepeatedData(lib.DataFromList(ids(4), shuffle=False), 3), lambda ds: passes(ds, 2))
    assert_same(lambda lib: lib.RepeatedData(lib.DataFromList(ids(4), shuffle=False), 0), lambda ds: passes(ds, 1))
    assert_same(lambda lib: lib.RepeatedDataPoint(lib.DataFromList(ids(3), shuffle=False), 3),
                lambda ds: passes(ds, 1))


@pytest.mark.parametrize("keep_state", [True, False])
@pytest.mark.parametrize("size", [3, 5, 7])
def test_fixed_size_data_keep_state(keep_state, size):
    with seeded(3):
        assert_same(lambda lib: reset(lib.FixedSizeData(lib.DataFromList(ids(5)), size, keep_state=keep_state)),
                    lambda ds: passes(ds, 4))


def test_fixed_size_data_over_an_empty_dataflow_raises_runtime_error_in_both():
    for lib in LIBS.values():
        with pytest.raises(RuntimeError):
            list(reset(lib.FixedSizeData(lib.DataFromList([], shuffle=False), 2)))


def test_concat_and_join_of_unequal_lengths():
    def sources(lib):
        return [lib.DataFromList(ids(2), shuffle=False), lib.DataFromList(ids(5)[::-1], shuffle=False),
                lib.DataFromList([[k] for k in range(3)], shuffle=False)]
    out = assert_same(lambda lib: lib.ConcatData(sources(lib)), lambda ds: (len(ds), passes(ds, 2)))
    assert out[0] == 10
    out = assert_same(lambda lib: lib.JoinData(sources(lib)), lambda ds: (len(ds), passes(ds, 2)))
    assert out[0] == 2 and len(out[1][0]) == 2 and len(out[1][0][0]) == 6
    dicts = [[{"a": k} for k in range(3)], [{"b": -k} for k in range(4)]]
    assert_same(lambda lib: lib.JoinData([lib.DataFromList(d, shuffle=False) for d in dicts]),
                lambda ds: passes(ds, 1))


def test_join_data_resets_a_dataflow_joined_twice_once():
    with seeded(5):
        assert_same(lambda lib: reset(lib.JoinData([ds := lib.DataFromList(ids(6)), ds])), lambda ds: passes(ds, 2))


# --- shuffling buffers, caches ---------------------------------------------------------------------

@pytest.mark.parametrize("buffer_size,num_reuse,interval", [(6, 1, None), (4, 2, None), (10, 1, 2), (3, 3, 1)])
def test_locally_shuffle_data_gives_the_same_stream_with_a_fixed_seed(buffer_size, num_reuse, interval):
    with seeded(99):
        out = assert_same(lambda lib: reset(lib.LocallyShuffleData(lib.DataFromList(ids(8)), buffer_size,
                                                                   num_reuse=num_reuse, shuffle_interval=interval)),
                          lambda ds: (len(ds), take(ds, 30), take(ds, 10)))
    assert out[0] == 8 * num_reuse


def test_locally_shuffle_data_with_a_buffer_under_3():
    # tensorpack's default shuffle_interval is buffer_size // 3, 0 here: ZeroDivisionError;
    # trainstack's is at least 1
    ds = reset(tp.LocallyShuffleData(tp.DataFromList(ids(4)), 2))
    with pytest.raises(ZeroDivisionError):
        next(iter(ds))
    ds = reset(ts.LocallyShuffleData(ts.DataFromList(ids(4)), 2))
    got = take(ds, 8)
    assert len(got) == 8 and set(got) <= {observe(dp) for dp in ids(4)}


@pytest.mark.parametrize("shuffle", [False, True])
def test_cache_data(shuffle):
    with seeded(21):
        out = assert_same(lambda lib: reset(lib.CacheData(lib.DataFromList(ids(6)), shuffle=shuffle)),
                          lambda ds: passes(ds, 3))
    assert sorted(out[0]) == sorted(out[2])


def test_print_data_describes_datapoints_and_passes_them_through(capsys):
    # tensorpack 0.11's PrintData uses np.sctypes, removed in NumPy 2: it raises there
    with pytest.raises(AttributeError, match="sctypes"):
        list(reset(tp.PrintData(tp.DataFromList(ids(3), shuffle=False), num=2)))
    capsys.readouterr()
    out = passes(reset(ts.PrintData(ts.DataFromList(ids(3), shuffle=False), num=2)), 1)
    printed = capsys.readouterr().out
    assert printed.count("datapoint 0/2 with 2 components") == 1 and printed.count("datapoint 1/2") == 1
    assert "0: int with value 0" in printed and "1: int with value 10" in printed
    assert out[0] == [observe(dp) for dp in ids(3)]
