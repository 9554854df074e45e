"""Dataflows that read stored datasets: LMDB databases, HDF5 files, SVMlight text files.

tensorpack 0.11's ``tensorpack.dataflow.format``, with its names and arguments. lmdb and
h5py are optional: they are imported when a reader is made, with an error naming the
extra to install (``trainstack-dataflow[lmdb]``, ``[hdf5]``). Files are opened in
``reset_state`` (in the process that iterates) and closed by :meth:`close`, when the
object is collected, or at once for readers that load everything into memory.
"""
from __future__ import annotations

import logging
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ._extras import require
from ._tensorpack_bytes import READ_MODES, check_serializer, loads
from .base import DataFlowReentrantGuard, RNGDataFlow
from .common import MapData

__all__ = ["HDF5Data", "LMDBData", "LMDBDataDecoder", "CaffeLMDB", "SVMLightData"]

logger = logging.getLogger("trainstack.dataflow")

KEYS_KEY = b"__keys__"  # where LMDBSerializer.save stores the list of keys, as tensorpack does


class HDF5Data(RNGDataFlow):
    """Datapoints zipped from the datasets ``data_paths`` of the HDF5 file ``filename``
    (``[f[p][k] for p in data_paths]`` for each index ``k``), in a new random order every pass
    when ``shuffle``. As in tensorpack, the datasets are read into memory at construction (the
    file is closed right after). Needs h5py (``trainstack-dataflow[hdf5]``)."""

    def __init__(self, filename: str, data_paths: Sequence[str], shuffle: bool = True) -> None:
        super().__init__()
        h5py = require("h5py", "HDF5Data")
        if isinstance(data_paths, str) or not data_paths:
            raise ValueError(f"HDF5Data: data_paths must be a non-empty list of dataset paths, got {data_paths!r}")
        with h5py.File(filename, "r") as f:
            missing = [p for p in data_paths if p not in f]
            if missing:
                raise KeyError(f"HDF5Data: {filename} has no dataset {missing}; it has {sorted(f.keys())}")
            logger.info("Loading %s to memory...", filename)
            self.dps = [f[p][...] for p in data_paths]
        lens = [len(d) for d in self.dps]
        if len(set(lens)) != 1:
            raise ValueError(f"HDF5Data: the datasets {list(data_paths)} of {filename} have different "
                             f"lengths {lens}; they are zipped, so they need one length")
        self._size = lens[0]
        self.shuffle = shuffle

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[list[Any]]:
        idxs = np.arange(self._size)
        if self.shuffle:
            self._require_rng().shuffle(idxs)
        for k in idxs:
            yield [dp[k] for dp in self.dps]


def _open_lmdb(path: str, who: str) -> Any:
    lmdb = require("lmdb", who)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{who}: no LMDB database at {path!r} (a directory holding data.mdb, "
                                "or an LMDB file)")
    return lmdb.open(path, subdir=os.path.isdir(path), readonly=True, lock=False, readahead=True,
                     map_size=1099511627776 * 2, max_readers=100)


class LMDBData(RNGDataFlow):
    """The ``[key, value]`` pairs (raw bytes) of the LMDB database ``lmdb_path`` (a directory
    or a file), tensorpack's reader: decode the values with :class:`LMDBDataDecoder` or a
    :class:`MapData`, or use :meth:`LMDBSerializer.load`.

    Without ``shuffle``, a pass walks the database in key order with a cursor (sequential
    reads, the fastest). With ``shuffle``, each pass visits ``keys`` in a new random order:
    ``keys`` is a list of keys, a format string such as ``"{:0>8d}"`` (formatted with
    0 .. size-1), or None: the list stored under ``__keys__`` by ``LMDBSerializer.save``, or
    else every key of the database (found by a slow walk). ``__keys__`` is stored in the
    serializer's format; ``serializer`` says which to accept when reading it (see
    :class:`LMDBSerializer`: ``"auto"`` unpickles tensorpack's pickled list, which runs code).
    Needs lmdb (``trainstack-dataflow[lmdb]``). The database is opened in ``reset_state``.
    """

    def __init__(self, lmdb_path: str, shuffle: bool = True, keys: Sequence[bytes] | str | None = None,
                 *, serializer: str = "auto") -> None:
        super().__init__()
        self._lmdb_path = os.fspath(lmdb_path)
        self._shuffle = shuffle
        self._serializer = check_serializer("LMDBData", serializer, READ_MODES)
        self._env: Any = None
        self._guard = DataFlowReentrantGuard()
        env = _open_lmdb(self._lmdb_path, "LMDBData")
        try:
            with env.begin() as txn:
                self._size: int = txn.stat()["entries"]
                self.keys = self._find_keys(txn, keys)
        finally:
            env.close()
        logger.info("Found %d entries in %s", self._size, self._lmdb_path)

    def _find_keys(self, txn: Any, keys: Sequence[bytes] | str | None) -> list[bytes] | None:
        stored = txn.get(KEYS_KEY)
        found = None
        if stored is not None:
            self._size -= 1
            found = loads(stored, self._serializer, source=f"the {KEYS_KEY!r} entry of {self._lmdb_path}")
            if not isinstance(found, list) or not all(isinstance(k, bytes) for k in found):
                raise ValueError(f"LMDBData: the {KEYS_KEY!r} entry of {self._lmdb_path} is not a list of "
                                 f"bytes keys but a {type(found).__name__}")
        if not self._shuffle:
            return found
        if isinstance(keys, str):
            return [keys.format(k).encode("ascii") for k in range(self._size)]
        if keys is not None:
            return [k.encode("ascii") if isinstance(k, str) else bytes(k) for k in keys]
        if found is None:
            logger.warning("LMDBData: %s has no %r entry: walking the database to find its keys (slow; "
                           "pass keys=)", self._lmdb_path, KEYS_KEY)
            found = [k for k in txn.cursor().iternext(keys=True, values=False) if k != KEYS_KEY]
        return found

    def reset_state(self) -> None:
        super().reset_state()
        self.close()
        self._env = _open_lmdb(self._lmdb_path, "LMDBData")

    def close(self) -> None:
        """Close the database (``reset_state`` opens it again)."""
        if self._env is not None:
            self._env.close()
            self._env = None

    def __del__(self) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:  # an open environment does not go to a worker process
        state = self.__dict__.copy()
        state["_env"] = None
        state["_guard"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._guard = DataFlowReentrantGuard()

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[list[bytes]]:
        with self._guard:
            if self._env is None:
                raise RuntimeError("LMDBData was iterated before reset_state(): call reset_state() once in "
                                   "the process that iterates it (it opens the database)")
            with self._env.begin() as txn:
                if not self._shuffle:
                    for k, v in txn.cursor():
                        if k != KEYS_KEY:
                            yield [k, v]
                    return
                keys = self.keys
                assert keys is not None  # with shuffle, _find_keys returns a list
                self._require_rng().shuffle(keys)
                for k in keys:
                    v = txn.get(k)
                    if v is None:
                        raise KeyError(f"LMDBData: {self._lmdb_path} has no key {k!r} (from keys=)")
                    yield [k, v]


class _KeyValueDecoder:
    """Picklable ``[k, v] -> decoder(k, v)``."""

    def __init__(self, decoder: Callable[[bytes, bytes], Any]) -> None:
        self.decoder = decoder

    def __call__(self, dp: list[bytes]) -> Any:
        return self.decoder(dp[0], dp[1])


class LMDBDataDecoder(MapData):
    """``decoder(key, value)`` for each pair of the :class:`LMDBData` ``lmdb_data``; a ``None``
    result drops the datapoint."""

    def __init__(self, lmdb_data: LMDBData, decoder: Callable[[bytes, bytes], Any]) -> None:
        if not callable(decoder):
            raise TypeError(f"LMDBDataDecoder needs a callable decoder(key, value), got {decoder!r}")
        super().__init__(lmdb_data, _KeyValueDecoder(decoder))


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def parse_caffe_datum(buf: bytes) -> dict[str, Any]:
    """The fields of a serialized ``caffe.Datum`` protobuf (channels=1, height=2, width=3,
    data=4, label=5, float_data=6, encoded=7), read from the protobuf wire format directly:
    no protobuf compiler or caffe is needed."""
    fields: dict[str, Any] = {"channels": 0, "height": 0, "width": 0, "data": b"", "label": 0,
                              "float_data": [], "encoded": False}
    names = {1: "channels", 2: "height", 3: "width", 5: "label", 7: "encoded"}
    pos = 0
    while pos < len(buf):
        tag, pos = _varint(buf, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            if number in names:
                if number == 5 and value >= 2**63:  # int32 label: negative numbers are 10-byte varints
                    value -= 2**64
                fields[names[number]] = bool(value) if number == 7 else value
        elif wire == 2:
            length, pos = _varint(buf, pos)
            if pos + length > len(buf):
                raise ValueError(f"field {number} claims {length} bytes, {len(buf) - pos} are left")
            chunk = bytes(buf[pos:pos + length])
            pos += length
            if number == 4:
                fields["data"] = chunk
            elif number == 6:  # packed floats
                fields["float_data"].extend(struct.unpack(f"<{length // 4}f", chunk))
        elif wire == 5:
            if number == 6:
                fields["float_data"].append(struct.unpack("<f", buf[pos:pos + 4])[0])
            pos += 4
        elif wire == 1:
            pos += 8
        else:
            raise ValueError(f"field {number} has unsupported wire type {wire}")
    return fields


class _CaffeDecoder:
    """``[HWC uint8 image, label]`` from a ``caffe.Datum`` value; None (dropped) for one that is
    not a raw uint8 image."""

    def __call__(self, key: bytes, value: bytes) -> list[Any] | None:
        try:
            datum = parse_caffe_datum(value)
            img = np.frombuffer(datum["data"], dtype=np.uint8)
            img = img.reshape(datum["channels"], datum["height"], datum["width"])
        except ValueError as e:
            logger.warning("CaffeLMDB: cannot read key %r: %s", key, e)
            return None
        return [img.transpose(1, 2, 0), datum["label"]]


def CaffeLMDB(lmdb_path: str, shuffle: bool = True,  # noqa: N802 - tensorpack's name
              keys: Sequence[bytes] | str | None = None) -> LMDBDataDecoder:
    """``[HWC uint8 image, label]`` datapoints from a Caffe LMDB database, whose values are
    ``caffe.Datum`` protobufs holding raw (not JPEG-encoded) images; a value that is not one is
    dropped with a warning, as in tensorpack. ``shuffle``, ``keys``: as :class:`LMDBData`
    (Caffe's databases have no ``__keys__``: pass ``keys="{:0>8d}"`` or the like to avoid the
    slow walk). Needs lmdb, not caffe: the protobuf is parsed directly."""
    logger.warning("Caffe LMDB format doesn't store jpeg-compressed images, it's not recommended due to "
                   "its inferior performance.")
    return LMDBDataDecoder(LMDBData(lmdb_path, shuffle, keys, serializer="pickle"), _CaffeDecoder())


def load_svmlight(filename: str) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of an SVMlight/libsvm text file as dense float64 arrays, as
    ``sklearn.datasets.load_svmlight_file`` reads it (``zero_based="auto"``: indices are
    one-based unless some index is 0); ``qid:`` fields and ``#`` comments are ignored."""
    labels: list[float] = []
    rows: list[list[tuple[int, float]]] = []
    with open(filename, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            tokens = line.split("#", 1)[0].split()
            if not tokens:
                continue
            try:
                labels.append(float(tokens[0]))
                row = []
                for token in tokens[1:]:
                    name, value = token.split(":", 1)
                    if name != "qid":
                        row.append((int(name), float(value)))
            except ValueError:
                raise ValueError(f"SVMLightData: {filename}:{lineno} is not 'label index:value ...': "
                                 f"{line.strip()!r}") from None
            rows.append(row)
    indices = [i for row in rows for i, _ in row]
    if indices and min(indices) < 0:
        raise ValueError(f"SVMLightData: {filename} has a negative feature index {min(indices)}")
    offset = 0 if (not indices or min(indices) == 0) else 1
    X = np.zeros((len(rows), (max(indices) + 1 - offset) if indices else 0), dtype=np.float64)
    for r, row in enumerate(rows):
        for i, x in row:
            X[r, i - offset] = x
    return X, np.asarray(labels, dtype=np.float64)


class SVMLightData(RNGDataFlow):
    """``[X_i, y_i]`` for each line of an SVMlight file (``X_i`` a dense float64 row), in a new
    random order every pass when ``shuffle``. Parsed here (tensorpack needed scikit-learn),
    with the same result as ``sklearn.datasets.load_svmlight_file``."""

    def __init__(self, filename: str, shuffle: bool = True) -> None:
        super().__init__()
        self.X, self.y = load_svmlight(filename)
        self.shuffle = shuffle

    def __len__(self) -> int:
        return len(self.y)

    def __iter__(self) -> Iterator[list[Any]]:
        idxs = np.arange(len(self))
        if self.shuffle:
            self._require_rng().shuffle(idxs)
        for i in idxs:
            yield [self.X[i, :], self.y[i]]
