"""The DataFlow protocol, RNGs and seeds, and that trainstack.dataflow stays free of TensorFlow."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from trainstack.dataflow import (
    DataFlow,
    DataFromGenerator,
    DataFromList,
    FakeData,
    ProxyDataFlow,
    dataflow_len_or_none,
    dataflow_size,
    fix_rng_seed,
    get_rng,
)
from trainstack.dataflow.errors import EmptyDataFlowError, InputError


@pytest.fixture(autouse=True)
def no_fixed_seed():
    fix_rng_seed(None)
    yield
    fix_rng_seed(None)


def test_importing_trainstack_dataflow_does_not_import_tensorflow():
    # trainstack.loop (pure Python, for trainstack.loop.checks) is the only layer it imports
    code = ("import sys, json, trainstack.dataflow, trainstack.dataflow._worker_main, trainstack.dataflow._worker_pool; "
            "print(json.dumps(sorted(m for m in ('tensorflow', 'keras', 'trainstack.callbacks', "
            "'trainstack.inputs') if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert json.loads(out.stdout) == []


def test_a_dataflow_without_size_raises_not_implemented_and_helpers_handle_it():
    class Gen(DataFlow):
        def __iter__(self):
            yield [1]

    with pytest.raises(NotImplementedError):
        len(Gen())
    assert dataflow_len_or_none(Gen()) is None
    assert dataflow_len_or_none(iter([])) is None
    assert dataflow_len_or_none([[1], [2]]) == 2
    with pytest.raises(InputError, match="has no __len__"):
        dataflow_size(Gen())
    with pytest.raises(EmptyDataFlowError, match="size 0"):
        dataflow_size([])


def test_tensorpack_old_spellings_get_data_and_size():
    class Old(DataFlow):
        def get_data(self):
            yield from ([0], [1], [2])

        def size(self):
            return 3

    assert list(Old()) == [[0], [1], [2]] and len(Old()) == 3
    assert list(Old().get_data()) == [[0], [1], [2]] and Old().size() == 3


def test_proxy_forwards_everything():
    class Counting(DataFlow):
        resets = 0

        def reset_state(self):
            self.resets += 1

        def __len__(self):
            return 2

        def __iter__(self):
            yield from ([1], [2])

    inner = Counting()
    proxy = ProxyDataFlow(inner)
    proxy.reset_state()
    assert inner.resets == 1 and len(proxy) == 2 and list(proxy) == [[1], [2]]
    with pytest.raises(NotImplementedError):
        len(ProxyDataFlow(iter([])))


def test_rng_dataflow_seeds_in_reset_state_and_differs_between_objects():
    a, b = DataFromList(list(range(50))), DataFromList(list(range(50)))
    with pytest.raises(RuntimeError, match="reset_state"):
        list(a)
    a.reset_state()
    b.reset_state()
    assert isinstance(a.rng, np.random.RandomState)
    assert sorted(a) == list(range(50))
    assert list(a) != list(b)  # two unseeded objects: 1 chance in 50! to be equal


def test_fix_rng_seed_makes_rng_dataflows_reproducible():
    def passes(seed):
        fix_rng_seed(seed)
        ds = DataFromList(list(range(30)))
        ds.reset_state()
        fake = FakeData([[2]], size=3)
        fake.reset_state()
        return [list(ds), list(ds), [x[0].tolist() for x in fake]]

    first, again, other = passes(7), passes(7), passes(8)
    assert first == again
    assert first[0] != first[1]  # a new order each pass
    assert first != other
    assert get_rng().randint(1 << 30) == get_rng().randint(1 << 30)  # both seeded with 8
    fix_rng_seed(None)
    with pytest.raises(TypeError):
        fix_rng_seed("seven")


def test_data_from_list_keeps_order_without_shuffle_and_generator_callable_restarts():
    ds = DataFromList([[1], [2], [3]], shuffle=False)
    assert list(ds) == list(ds) == [[1], [2], [3]]
    gen = DataFromGenerator(lambda: iter([[1], [2]]))
    assert list(gen) == list(gen) == [[1], [2]]
    with pytest.raises(NotImplementedError):
        len(gen)
    assert len(DataFromGenerator([[1], [2], [3]])) == 3


def test_fake_data_shapes_dtypes_domain_and_fixed_mode():
    ds = FakeData([[2, 3], [4]], size=5, dtype=["float32", "int32"], domain=[(0, 1), (10, 20)])
    ds.reset_state()
    points = list(ds)
    assert len(points) == len(ds) == 5
    for img, label in points:
        assert img.shape == (2, 3) and img.dtype == np.float32 and 0 <= img.min() and img.max() < 1
        assert label.shape == (4,) and label.dtype == np.int32 and 10 <= label.min() and label.max() < 20
    assert not np.array_equal(points[0][0], points[1][0])
    fixed = FakeData([[3]], size=4, random=False)
    fixed.reset_state()
    same = list(fixed)
    assert all(np.array_equal(same[0][0], p[0]) for p in same)
    with pytest.raises(ValueError, match="2 shapes need as many dtypes"):
        FakeData([[1], [2]], dtype=["float32"])
