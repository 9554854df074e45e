"""BatchData, MapData, RepeatedData, FixedSizeData, ConcatData, JoinData, LocallyShuffleData, ..."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from trainstack.dataflow import (
    BatchData,
    CacheData,
    ConcatData,
    DataFlow,
    DataFromList,
    FixedSizeData,
    JoinData,
    LocallyShuffleData,
    MapData,
    MapDataComponent,
    PrintData,
    RepeatedData,
    RepeatedDataPoint,
    SelectComponent,
    fix_rng_seed,
)


def ordered(n, start=0):
    return DataFromList([[i] for i in range(start, start + n)], shuffle=False)


def test_batch_data_drops_or_keeps_the_remainder():
    ds = ordered(10)
    full = BatchData(ds, 4)
    batches = list(full)
    assert len(full) == 2 and [b[0].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    with_rest = BatchData(ds, 4, remainder=True)
    batches = list(with_rest)
    assert len(with_rest) == 3 and [b[0].tolist() for b in batches][-1] == [8, 9]
    assert len(BatchData(ordered(8), 4, remainder=True)) == 2  # no remainder to keep
    with pytest.raises(ValueError, match="larger than the 3 datapoints"):
        BatchData(ordered(3), 4)
    BatchData(ordered(3), 4, remainder=True)  # allowed: one short batch


def test_batch_data_stacks_components_with_tensorpack_dtypes():
    ds = DataFromList([[np.full((2, 3), i, np.float64), i, float(i), i % 2 == 0, np.uint8(i), f"s{i}"]
                       for i in range(3)], shuffle=False)
    img, ints, floats, bools, u8, strs = next(iter(BatchData(ds, 3)))
    assert img.shape == (3, 2, 3) and img.dtype == np.float64 and img[2, 1, 1] == 2
    assert ints.dtype == np.int32 and ints.tolist() == [0, 1, 2]
    assert floats.dtype == np.float32 and bools.dtype == np.bool_ and bools.tolist() == [True, False, True]
    assert u8.dtype == np.uint8 and strs.tolist() == ["s0", "s1", "s2"]


def test_batch_data_dict_datapoints_and_use_list():
    ds = DataFromList([{"x": np.ones(2) * i, "y": i} for i in range(4)], shuffle=False)
    batch = next(iter(BatchData(ds, 2)))
    assert set(batch) == {"x", "y"} and batch["x"].shape == (2, 2) and batch["y"].tolist() == [0, 1]
    listed = next(iter(BatchData(ds, 2, use_list=True)))
    assert isinstance(listed["x"], list) and len(listed["x"]) == 2 and listed["y"] == [0, 1]


def test_batch_data_names_the_component_it_cannot_stack():
    ds = DataFromList([[np.zeros(2)], [np.zeros(3)]], shuffle=False)
    with pytest.raises(ValueError, match=r"component 0 .*shapes \[\(2,\), \(3,\)\]"):
        list(BatchData(ds, 2))
    with pytest.raises(ValueError, match="list, tuple or dict"):
        list(BatchData(DataFromList([1, 2], shuffle=False), 2))


def test_map_data_drops_none_and_map_component():
    ds = MapData(ordered(10), lambda dp: None if dp[0] % 3 == 0 else [dp[0] * 10])
    assert [dp[0] for dp in ds] == [10, 20, 40, 50, 70, 80]
    assert len(ds) == 10  # an upper bound, as in tensorpack
    pairs = DataFromList([[i, -i] for i in range(5)], shuffle=False)
    mapped = list(MapDataComponent(pairs, lambda v: None if v == -2 else v * 100, index=1))
    assert mapped == [[0, 0], [1, -100], [3, -300], [4, -400]]
    assert list(pairs)[1] == [1, -1]  # the input's datapoints are not modified
    dicts = DataFromList([{"a": 1, "b": 2}], shuffle=False)
    assert list(MapDataComponent(dicts, lambda v: v + 1, index="b")) == [{"a": 1, "b": 3}]
    assert list(SelectComponent(DataFromList([[1, 2, 3]], shuffle=False), [2, 0])) == [[3, 1]]


def test_repeated_data_lengths_and_forever():
    ds = RepeatedData(ordered(3), 2)
    assert len(ds) == 6 and [dp[0] for dp in ds] == [0, 1, 2, 0, 1, 2]
    forever = RepeatedData(ordered(3), -1)
    with pytest.raises(NotImplementedError):
        len(forever)
    it = iter(forever)
    assert [next(it)[0] for _ in range(8)] == [0, 1, 2, 0, 1, 2, 0, 1]
    assert len(RepeatedDataPoint(ordered(2), 3)) == 6
    assert [dp[0] for dp in RepeatedDataPoint(ordered(2), 3)] == [0, 0, 0, 1, 1, 1]


def test_fixed_size_data_keeps_or_restarts_the_iterator():
    kept = FixedSizeData(ordered(5, start=1), 3)
    kept.reset_state()
    assert len(kept) == 3
    assert [[dp[0] for dp in kept] for _ in range(3)] == [[1, 2, 3], [4, 5, 1], [2, 3, 4]]
    fresh = FixedSizeData(ordered(5, start=1), 3, keep_state=False)
    fresh.reset_state()
    assert [[dp[0] for dp in fresh] for _ in range(2)] == [[1, 2, 3], [1, 2, 3]]
    longer = FixedSizeData(ordered(5, start=1), 6, keep_state=False)
    longer.reset_state()
    assert [dp[0] for dp in longer] == [1, 2, 3, 4, 5, 1]


def test_concat_and_join():
    cat = ConcatData([ordered(2), ordered(3, start=10)])
    cat.reset_state()
    assert len(cat) == 5 and [dp[0] for dp in cat] == [0, 1, 10, 11, 12]
    joined = JoinData([ordered(3), ordered(4, start=10)])
    joined.reset_state()
    assert len(joined) == 3 and list(joined) == [[0, 10], [1, 11], [2, 12]]
    dicts = JoinData([DataFromList([{"a": i}], shuffle=False) for i in range(2)] +
                     [DataFromList([{"b": 5}], shuffle=False)])
    assert list(dicts) == [{"a": 1, "b": 5}]


def test_locally_shuffle_data_is_a_permutation_of_the_passes():
    fix_rng_seed(3)
    try:
        ds = LocallyShuffleData(ordered(20), buffer_size=8)
        ds.reset_state()
    finally:
        fix_rng_seed(None)
    it = iter(ds)
    taken = [next(it)[0] for _ in range(60)]
    assert len(ds) == 20
    # the buffer of 8 holds datapoints back: the 60 out and the 7 in the buffer (the generator
    # stopped at the 60th out, before the 68th in enters) are exactly the first 67 in (3 passes
    # and ids 0..6 of the 4th), nothing lost or duplicated
    in_buffer = [dp[0] for dp in ds.q]
    assert Counter(taken) + Counter(in_buffer) == Counter(list(range(20)) * 3 + list(range(7)))
    assert taken[:20] != list(range(20))  # shuffled
    reuse = LocallyShuffleData(ordered(10), buffer_size=4, num_reuse=2)
    reuse.reset_state()
    it = iter(reuse)
    assert len(reuse) == 20 and Counter(next(it)[0] for _ in range(16)).most_common(1)[0][1] >= 2


def test_cache_data_replays_the_first_pass():
    class Once(DataFlow):
        passes = 0

        def __iter__(self):
            self.passes += 1
            yield from ([1], [2], [3])

    inner = Once()
    cached = CacheData(inner)
    cached.reset_state()
    assert list(cached) == list(cached) == [[1], [2], [3]] and inner.passes == 1


def test_print_data_describes_the_first_datapoints(capsys):
    ds = PrintData(DataFromList([[np.arange(6).reshape(2, 3), 7, [1, 2]]] * 3, shuffle=False), num=2,
                   name="mine")
    ds.reset_state()
    assert len(list(ds)) == 3
    out = capsys.readouterr().out
    assert out.count("contents of DataFlow (mine)") == 2
    assert "ndarray:int64 of shape (2, 3) in range [0, 5]" in out and "int with value 7" in out
    assert "list of len 2" in out
