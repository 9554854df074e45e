"""The differential suite, stored formats: files written by tensorpack 0.11's serializers load in
trainstack and the reverse (LMDB, NumPy ``.npz``, HDF5), and the readers (``LMDBData``,
``LMDBDataDecoder``, ``HDF5Data``, ``SVMLightData``) give the same datapoints.
"""
from __future__ import annotations

import os
import pickle
import sys
from typing import Any

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import tensorpack.dataflow.serialize as tp_serialize  # noqa: E402
from pipelines import LIBS, observe, passes, seeded, tp, ts  # noqa: E402
from tensorpack.utils.serialize import MsgpackSerializer  # noqa: E402


def datapoints() -> list[list[Any]]:
    """Small datapoints of the kinds a dataset holds: arrays of several dtypes, numbers, str,
    bytes, nested lists and dicts."""
    return [[np.arange(k, k + 6, dtype=np.float32).reshape(2, 3), np.int64(k), k, f"name{k}", b"\x00\xff" * k,
             {"box": [k, k + 1.5], "flag": bool(k % 2)}, np.array(k % 2 == 0)] for k in range(7)]


def flat_arrays() -> list[list[np.ndarray]]:
    """Datapoints whose components stack into HDF5 datasets."""
    return [[np.full((2, 2), k, dtype=np.uint8), np.float64(k) / 3, np.array([k, -k], dtype=np.int16)]
            for k in range(9)]


def all_of(ds: Any) -> list[Any]:
    """One pass of ``ds`` after ``reset_state``, observed; then the LMDB environment it opened is
    closed (lmdb refuses to open one path twice in a process, and tensorpack never closes it)."""
    ds.reset_state()
    try:
        return [observe(dp) for dp in ds]
    finally:
        release(ds)


def release(ds: Any) -> None:
    while ds is not None:
        if isinstance(ds, ts.LMDBData):
            ds.close()
        elif getattr(ds, "_lmdb", None) is not None:  # tensorpack's LMDBData
            ds._lmdb.close()
        ds = getattr(ds, "ds", None)


EXPECTED = [observe(dp) for dp in datapoints()]


# --- LMDBSerializer ---------------------------------------------------------------------------

@pytest.mark.parametrize("writer", ["tensorpack", "trainstack"])
@pytest.mark.parametrize("as_dir", [True, False])
def test_lmdb_files_move_both_ways(tmp_path, writer, as_dir):
    path = str(tmp_path / "db") if not as_dir else str(tmp_path)
    lib = LIBS[writer]
    lib.LMDBSerializer.save(lib.DataFromList(datapoints(), shuffle=False), path)
    for reader, rlib in LIBS.items():
        ds = rlib.LMDBSerializer.load(path, shuffle=False)
        assert len(ds) == len(EXPECTED), reader
        assert all_of(ds) == EXPECTED, f"{reader} reading what {writer} wrote"
    # shuffled: a permutation, the same one in both with one seed
    with seeded(5):
        got = {name: all_of(rlib.LMDBSerializer.load(path, shuffle=True)) for name, rlib in LIBS.items()}
    assert got["trainstack"] == got["tensorpack"]
    assert sorted(map(repr, got["trainstack"])) == sorted(map(repr, EXPECTED))
    assert got["trainstack"] != EXPECTED


def test_lmdb_save_refuses_an_existing_database_in_both(tmp_path):
    path = str(tmp_path / "db.lmdb")
    ts.LMDBSerializer.save(ts.DataFromList(datapoints(), shuffle=False), path)
    with pytest.raises(AssertionError):
        tp.LMDBSerializer.save(tp.DataFromList(datapoints(), shuffle=False), path)
    with pytest.raises(FileExistsError, match="exists"):
        ts.LMDBSerializer.save(ts.DataFromList(datapoints(), shuffle=False), path)


def test_lmdb_msgpack_files_move_both_ways(tmp_path, monkeypatch):
    """tensorpack with TENSORPACK_SERIALIZE=msgpack (its dumps/loads swapped the same way) and
    trainstack's ``serializer="msgpack"`` read each other's files; trainstack's msgpack mode
    refuses tensorpack's default pickled files."""
    arrays = flat_arrays()
    monkeypatch.setattr(tp_serialize, "dumps", MsgpackSerializer.dumps)
    tp.LMDBSerializer.save(tp.DataFromList(arrays, shuffle=False), str(tmp_path / "tp.lmdb"))
    ts.LMDBSerializer.save(ts.DataFromList(arrays, shuffle=False), str(tmp_path / "ts.lmdb"), serializer="msgpack")
    expected = [observe([dp[0], float(dp[1]), dp[2]]) for dp in arrays]  # np.float64 is a float: msgpack sends a float
    ts_read = all_of(ts.LMDBSerializer.load(str(tmp_path / "tp.lmdb"), shuffle=False, serializer="msgpack"))
    assert ts_read == expected
    monkeypatch.setattr(sys.modules["tensorpack.dataflow.format"], "loads", MsgpackSerializer.loads)
    monkeypatch.setattr(tp.LMDBSerializer, "_deserialize_lmdb", staticmethod(lambda dp: MsgpackSerializer.loads(dp[1])))
    assert all_of(tp.LMDBSerializer.load(str(tmp_path / "ts.lmdb"), shuffle=False)) == expected

    monkeypatch.undo()
    tp.LMDBSerializer.save(tp.DataFromList(arrays, shuffle=False), str(tmp_path / "pickled.lmdb"))
    with pytest.raises(ValueError, match="pickled .*refuses pickle"):
        ts.LMDBSerializer.load(str(tmp_path / "pickled.lmdb"), shuffle=False, serializer="msgpack")


def test_lmdb_data_and_decoder_give_the_same_pairs(tmp_path):
    path = str(tmp_path / "db.lmdb")
    tp.LMDBSerializer.save(tp.DataFromList(datapoints(), shuffle=False), path)

    def decode(key: bytes, value: bytes) -> Any:
        k = int(key)
        return None if k % 3 == 0 else [k, pickle.loads(value)[3]]

    got = {}
    for name, lib in LIBS.items():
        raw = all_of(lib.LMDBData(path, shuffle=False))
        decoded = all_of(lib.LMDBDataDecoder(lib.LMDBData(path, shuffle=False), decode))
        with seeded(3):
            shuffled = all_of(lib.LMDBData(path, shuffle=True))
        got[name] = (raw, decoded, shuffled)
    assert got["trainstack"] == got["tensorpack"]
    raw, decoded, shuffled = got["trainstack"]
    assert [dp[1][1] for dp in raw] == [f"{k:08}".encode() for k in range(7)]
    assert decoded == [observe([k, f"name{k}"]) for k in (1, 2, 4, 5)]
    assert sorted(shuffled) == sorted(raw) and shuffled != raw


def test_lmdb_data_keys_as_a_format_string_works_in_trainstack_not_in_tensorpack(tmp_path):
    """Documented difference: tensorpack 0.11 formats ``keys="{:08d}"`` into a ``map`` of str,
    which it cannot shuffle (``TypeError``); trainstack makes a list of bytes keys."""
    path = str(tmp_path / "db.lmdb")
    tp.LMDBSerializer.save(tp.DataFromList(datapoints(), shuffle=False), path)
    tp_ds = tp.LMDBData(path, shuffle=True, keys="{:08d}")
    tp_ds.reset_state()
    with pytest.raises(TypeError):
        list(tp_ds)
    release(tp_ds)
    ts_ds = ts.LMDBData(path, shuffle=True, keys="{:08d}")
    ts_ds.reset_state()
    assert sorted(k for k, _ in ts_ds) == [f"{k:08}".encode() for k in range(7)]
    ts_ds.close()


def test_lmdb_data_before_reset_state_raises_in_both(tmp_path):
    path = str(tmp_path / "db.lmdb")
    ts.LMDBSerializer.save(ts.DataFromList(datapoints(), shuffle=False), path)
    with pytest.raises(AttributeError):
        list(tp.LMDBData(path, shuffle=False))
    with pytest.raises(RuntimeError, match="before reset_state"):
        list(ts.LMDBData(path, shuffle=False))


# --- NumpySerializer, HDF5Serializer, HDF5Data -------------------------------------------------

def test_numpy_serializer_round_trip_and_both_directions(tmp_path):
    """trainstack's file loads in both. tensorpack 0.11's ``save`` fails on NumPy >= 1.24
    (``np.object``, documented), so its 2-D layout is written here as it would write it."""
    path = str(tmp_path / "ts.npz")
    ts.NumpySerializer.save(ts.DataFromList(flat_arrays(), shuffle=False), path)
    expected = [observe(list(dp)) for dp in flat_arrays()]
    for name, lib in LIBS.items():
        ds = lib.NumpySerializer.load(path, shuffle=False)
        assert len(ds) == len(expected)
        assert all_of(ds) == expected, f"{name} reading trainstack's file: datapoints come back as lists"
    if not hasattr(np, "object"):
        with pytest.raises(AttributeError):
            tp.NumpySerializer.save(tp.DataFromList(flat_arrays(), shuffle=False), str(tmp_path / "tp.npz"))
    legacy = np.empty((len(flat_arrays()), 3), dtype=object)
    for i, dp in enumerate(flat_arrays()):
        legacy[i, :] = dp
    np.savez_compressed(tmp_path / "legacy.npz", buffer=legacy)
    for lib in LIBS.values():
        ds = lib.NumpySerializer.load(str(tmp_path / "legacy.npz"), shuffle=False)
        ds.reset_state()
        assert [observe(list(dp)) for dp in ds] == expected
    with seeded(9):
        shuffled = {name: all_of(lib.NumpySerializer.load(path, shuffle=True)) for name, lib in LIBS.items()}
    assert shuffled["trainstack"] == shuffled["tensorpack"] != expected
    assert sorted(map(repr, shuffled["trainstack"])) == sorted(map(repr, expected))


@pytest.mark.parametrize("writer", ["tensorpack", "trainstack"])
def test_hdf5_files_move_both_ways(tmp_path, writer):
    path = str(tmp_path / "data.h5")
    data_paths = ["image", "group/value", "pair"]
    lib = LIBS[writer]
    lib.HDF5Serializer.save(lib.DataFromList(flat_arrays(), shuffle=False), path, data_paths)
    got = {name: all_of(rlib.HDF5Serializer.load(path, data_paths, shuffle=False)) for name, rlib in LIBS.items()}
    assert got["trainstack"] == got["tensorpack"]
    assert got["trainstack"] == [observe(list(dp)) for dp in flat_arrays()]
    with seeded(11):
        shuffled = {name: all_of(rlib.HDF5Data(path, data_paths, shuffle=True)) for name, rlib in LIBS.items()}
    assert shuffled["trainstack"] == shuffled["tensorpack"] != got["trainstack"]


def test_hdf5_errors_name_what_was_wrong(tmp_path):
    path = str(tmp_path / "data.h5")
    with pytest.raises(ValueError, match="datapoint 0 has 3 components, but 2 data_paths"):
        ts.HDF5Serializer.save(ts.DataFromList(flat_arrays(), shuffle=False), path, ["a", "b"])
    ts.HDF5Serializer.save(ts.DataFromList(flat_arrays(), shuffle=False), path, ["a", "b", "c"])
    with pytest.raises(KeyError, match=r"no dataset \['nope'\]"):
        ts.HDF5Data(path, ["a", "nope"])
    with pytest.raises(ValueError, match="non-empty list"):
        ts.HDF5Data(path, "a")


# --- SVMLightData -----------------------------------------------------------------------------

SVMLIGHT = """\
1 1:0.5 3:2.0 # a comment
-1 qid:3 2:1.5
# a comment line

0 1:-1 2:4 3:0.25
"""


def test_svmlight_data_parses_as_scikit_learn_does(tmp_path):
    path = tmp_path / "data.svm"
    path.write_text(SVMLIGHT)
    ts_ds = ts.SVMLightData(str(path), shuffle=False)
    ts_ds.reset_state()
    got = [observe(dp) for dp in ts_ds]
    expected = [[np.array([0.5, 0.0, 2.0]), np.float64(1)], [np.array([0.0, 1.5, 0.0]), np.float64(-1)],
                [np.array([-1.0, 4.0, 0.25]), np.float64(0)]]
    assert got == [observe(dp) for dp in expected]
    pytest.importorskip("sklearn", reason="tensorpack's SVMLightData needs scikit-learn (not installed here)")
    tp_ds = tp.SVMLightData(str(path), shuffle=False)
    tp_ds.reset_state()
    assert [observe(dp) for dp in tp_ds] == got
    with seeded(2):
        assert passes(reset_shuffled(ts.SVMLightData, path), 1) == passes(reset_shuffled(tp.SVMLightData, path), 1)


def reset_shuffled(cls: Any, path: Any) -> Any:
    ds = cls(str(path), shuffle=True)
    ds.reset_state()
    return ds
