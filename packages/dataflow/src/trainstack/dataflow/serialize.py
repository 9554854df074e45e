"""Save a dataflow to a file and load it back as a dataflow: tensorpack 0.11's serializers.

The formats are tensorpack's, so files move both ways between tensorpack 0.11 and
trainstack (``tests/parity/test_parity_serialize.py``). Each datapoint is stored as
tensorpack's ``dumps`` writes it: by default a pickle (``serializer="pickle"``, which
tensorpack 0.11 reads by default), or msgpack with msgpack-numpy's array layout
(``serializer="msgpack"``, which tensorpack reads with ``TENSORPACK_SERIALIZE=msgpack``).

Loading a pickle runs whatever code the file names: load pickled files only from sources
you trust. ``load(..., serializer="msgpack")`` refuses pickled values, and reads only
numbers, str, bytes, lists, dicts and NumPy arrays; files saved with
``serializer="msgpack"`` load that way. (``NumpySerializer`` files are pickles inside an
``.npz`` whatever you choose; ``HDF5Serializer`` files hold only arrays.)

:class:`LMDBSerializer` is the format of tensorpack's "Efficient DataFlow" tutorial: the
whole dataset in one LMDB file, read with sequential (cursor) reads and shuffled locally::

    LMDBSerializer.save(ds, "/data/train.lmdb")
    ds = LMDBSerializer.load("/data/train.lmdb", shuffle=False)
    ds = LocallyShuffleData(ds, 50000)
"""
from __future__ import annotations

import logging
import os
import platform
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import tqdm

from ._extras import require
from ._tensorpack_bytes import READ_MODES, SERIALIZERS, check_serializer, dumps, loads
from .common import FixedSizeData, MapData
from .format import KEYS_KEY, HDF5Data, LMDBData
from .protocol import dataflow_len_or_none, reset_dataflow
from .raw import DataFromGenerator, DataFromList

__all__ = ["LMDBSerializer", "NumpySerializer", "TFRecordSerializer", "HDF5Serializer"]

logger = logging.getLogger("trainstack.dataflow")


def _reset_and_size(df: Any) -> int | None:
    if not hasattr(df, "__iter__"):
        raise TypeError(f"a serializer needs a dataflow (something with __iter__), got {type(df).__name__}")
    reset_dataflow(df)
    return dataflow_len_or_none(df)


def _progress(total: int | None, **kwargs: Any) -> tqdm.tqdm:
    return tqdm.tqdm(total=total, dynamic_ncols=True, ascii=True, **kwargs)


class _Loads:
    """Picklable ``bytes -> datapoint`` with one serializer, naming the file in its errors."""

    def __init__(self, serializer: str, path: str) -> None:
        self.serializer, self.path = serializer, path

    def __call__(self, data: Any) -> Any:
        return loads(data, self.serializer, source=f"a record of {self.path}")


class _LoadsValue(_Loads):
    def __call__(self, dp: list[bytes]) -> Any:
        return loads(dp[1], self.serializer, source=f"the value of key {dp[0]!r} in {self.path}")


class LMDBSerializer:
    """A dataflow in an LMDB database: keys ``b"00000000"``, ``b"00000001"``, ... (the index of
    each datapoint), values the serialized datapoints, and the list of keys under
    ``b"__keys__"``, as tensorpack 0.11 writes it. Needs lmdb (``trainstack-dataflow[lmdb]``).

    ``save(df, path)``: ``path`` is a directory (``data.mdb`` inside it) or a file name; it must
    not hold a database yet. ``load(path, shuffle=True)``: an :class:`LMDBData` reading the
    values, mapped through the deserializer; ``shuffle=False`` reads in key order with a cursor
    (the fast way: shuffle locally with :class:`LocallyShuffleData`). ``serializer`` of
    ``load``: ``"auto"`` (unpickles pickled values: trusted files only), ``"msgpack"`` (refuses
    pickle) or ``"pickle"``.
    """

    @staticmethod
    def save(df: Any, path: str, write_frequency: int = 5000, *, serializer: str = "pickle") -> None:
        """Write every datapoint of one pass of ``df`` to the LMDB database ``path``, committing
        every ``write_frequency`` datapoints (fewer: less memory)."""
        lmdb = require("lmdb", "LMDBSerializer")
        check_serializer("LMDBSerializer.save", serializer, SERIALIZERS)
        path = os.fspath(path)
        isdir = os.path.isdir(path)
        if os.path.isfile(os.path.join(path, "data.mdb") if isdir else path):
            raise FileExistsError(f"LMDBSerializer.save: an LMDB database exists at {path!r}; remove it or "
                                  "choose another path")
        # a huge map costs only address space on Linux, not elsewhere (NVIDIA/DIGITS#206)
        map_size = 1099511627776 * 2 if platform.system() == "Linux" else 128 * 10**6
        size = _reset_and_size(df)
        db = lmdb.open(path, subdir=isdir, map_size=map_size, readonly=False, meminit=False, map_async=True)
        try:
            def put_or_grow(txn: Any, key: bytes, value: bytes) -> Any:
                while True:
                    try:
                        txn.put(key, value)
                        return txn
                    except lmdb.MapFullError:
                        txn.abort()
                        new_size = db.info()["map_size"] * 2
                        logger.info("Doubling LMDB map_size to %.2fGB", new_size / 10**9)
                        db.set_mapsize(new_size)
                        txn = db.begin(write=True)

            count = 0
            txn = db.begin(write=True)
            try:
                with _progress(size) as pbar:
                    for idx, dp in enumerate(df):
                        txn = put_or_grow(txn, f"{idx:08}".encode("ascii"), dumps(dp, serializer))
                        count = idx + 1
                        pbar.update()
                        if count % write_frequency == 0:
                            txn.commit()
                            txn = db.begin(write=True)
                txn.commit()
            except BaseException:
                txn.abort()
                raise
            keys = [f"{k:08}".encode("ascii") for k in range(count)]
            txn = db.begin(write=True)
            txn = put_or_grow(txn, KEYS_KEY, dumps(keys, serializer))
            txn.commit()
            db.sync()
        finally:
            db.close()

    @staticmethod
    def load(path: str, shuffle: bool = True, *, serializer: str = "auto") -> MapData:
        """The datapoints saved at ``path``, a dataflow (``len`` is their number)."""
        check_serializer("LMDBSerializer.load", serializer, READ_MODES)
        path = os.fspath(path)
        return MapData(LMDBData(path, shuffle=shuffle, serializer=serializer), _LoadsValue(serializer, path))


def _object_array(items: Sequence[Any]) -> np.ndarray:
    arr = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        arr[i] = item
    return arr


class NumpySerializer:
    """A whole dataflow in one compressed ``.npz`` file, as an object array ``buffer`` (pickled
    inside the file: loading runs code, so trusted files only). It holds the dataflow in memory
    and is slower than :class:`LMDBSerializer`. tensorpack 0.11's ``save`` stored a 2-D object
    array (one row per datapoint) and fails on NumPy >= 1.24; both layouts load, each
    datapoint as a list."""

    @staticmethod
    def save(df: Any, path: str) -> None:
        size = _reset_and_size(df)
        buffer = []
        with _progress(size) as pbar:
            for dp in df:
                buffer.append(dp)
                pbar.update()
        np.savez_compressed(path, buffer=_object_array(buffer))

    @staticmethod
    def load(path: str, shuffle: bool = True) -> DataFromList:
        with np.load(path, allow_pickle=True) as f:
            if "buffer" not in f:
                raise KeyError(f"NumpySerializer.load: {path} has no 'buffer' array (it has {list(f.keys())})")
            buffer = f["buffer"]
        return DataFromList([list(dp) if isinstance(dp, np.ndarray) and dp.dtype == object else dp
                             for dp in buffer], shuffle=shuffle)


class _TFRecords:
    """The records of a TFRecord file, read by TensorFlow (imported when iterated)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self) -> Iterator[bytes]:
        tf = require("tensorflow", "TFRecordSerializer")
        for record in tf.data.TFRecordDataset(self.path):
            yield record.numpy()


class TFRecordSerializer:
    """A dataflow in a TFRecord file: one record per datapoint, each the serialized datapoint
    (tensorpack's layout). A TFRecord file has no random access nor a stored size: pass
    ``size`` to ``load`` for a dataflow with a ``len``. Needs TensorFlow, imported when used;
    :class:`LMDBSerializer` is faster."""

    @staticmethod
    def save(df: Any, path: str, *, serializer: str = "pickle") -> None:
        tf = require("tensorflow", "TFRecordSerializer")
        check_serializer("TFRecordSerializer.save", serializer, SERIALIZERS)
        size = _reset_and_size(df)
        with tf.io.TFRecordWriter(os.fspath(path)) as writer, _progress(size) as pbar:
            for dp in df:
                writer.write(dumps(dp, serializer))
                pbar.update()

    @staticmethod
    def load(path: str, size: int | None = None, *, serializer: str = "auto") -> Any:
        """The datapoints of ``path`` (``"auto"`` unpickles: trusted files only); with ``size``,
        passes of exactly ``size`` datapoints (:class:`FixedSizeData`), as in tensorpack."""
        check_serializer("TFRecordSerializer.load", serializer, READ_MODES)
        path = os.fspath(path)
        ds: Any = MapData(DataFromGenerator(_TFRecords(path)), _Loads(serializer, path))
        if size is not None:
            ds = FixedSizeData(ds, size)
        return ds


class HDF5Serializer:
    """A dataflow in an HDF5 file: component ``k`` of every datapoint stacked into the dataset
    ``data_paths[k]``. The whole dataflow is held in memory while saving and loading. Needs
    h5py (``trainstack-dataflow[hdf5]``)."""

    @staticmethod
    def save(df: Any, path: str, data_paths: Sequence[str]) -> None:
        h5py = require("h5py", "HDF5Serializer")
        if isinstance(data_paths, str) or not data_paths:
            raise ValueError(f"HDF5Serializer.save: data_paths must be a non-empty list of dataset paths, "
                             f"got {data_paths!r}")
        size = _reset_and_size(df)
        buffer: dict[str, list[Any]] = defaultdict(list)
        with _progress(size) as pbar:
            for idx, dp in enumerate(df):
                if len(dp) != len(data_paths):
                    raise ValueError(f"HDF5Serializer.save: datapoint {idx} has {len(dp)} components, but "
                                     f"{len(data_paths)} data_paths were given ({list(data_paths)})")
                for k, el in zip(data_paths, dp):
                    buffer[k].append(el)
                pbar.update()
        with h5py.File(path, "w") as hf:
            for data_path in data_paths:
                hf.create_dataset(data_path, data=np.asarray(buffer[data_path]))

    @staticmethod
    def load(path: str, data_paths: Sequence[str], shuffle: bool = True) -> HDF5Data:
        return HDF5Data(path, data_paths, shuffle)
