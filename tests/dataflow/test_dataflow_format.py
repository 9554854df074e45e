"""CaffeLMDB without caffe: the ``caffe.Datum`` protobuf of each value is parsed from its wire
format, and a value that is not a raw image is dropped, as in tensorpack (whose CaffeLMDB needs
caffe's compiled protobuf, so it is not run beside it)."""
from __future__ import annotations

import lmdb
import numpy as np

from trainstack.dataflow import CaffeLMDB


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int32 labels are 10-byte varints
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def datum(img_chw: np.ndarray, label: int) -> bytes:
    c, h, w = img_chw.shape
    data = img_chw.astype(np.uint8).tobytes()
    return (b"\x08" + varint(c) + b"\x10" + varint(h) + b"\x18" + varint(w)
            + b"\x22" + varint(len(data)) + data + b"\x28" + varint(label))


def test_caffe_lmdb_reads_raw_datums_and_drops_what_is_not_one(tmp_path):
    images = [np.arange(k, k + 24).reshape(3, 2, 4) for k in range(3)]
    labels = [0, 7, -1]
    env = lmdb.open(str(tmp_path), map_size=1 << 24)
    with env.begin(write=True) as txn:
        for k, (img, label) in enumerate(zip(images, labels)):
            txn.put(f"{k:08d}".encode(), datum(img, label))
        txn.put(b"00000003", b"\x22\x10short")  # claims 16 bytes, holds 5: not a datum
    env.close()
    ds = CaffeLMDB(str(tmp_path), shuffle=False)
    ds.reset_state()
    got = list(ds)
    assert len(got) == 3  # the malformed value was dropped
    for (img, label), expected, expected_label in zip(got, images, labels):
        assert img.dtype == np.uint8 and img.shape == (2, 4, 3)  # HWC
        assert img.tolist() == expected.transpose(1, 2, 0).tolist() and label == expected_label
    ds.ds.close()  # lmdb opens a path once per process: close this reader before the next
    shuffled = CaffeLMDB(str(tmp_path), shuffle=True, keys="{:0>8d}")
    shuffled.reset_state()
    assert sorted(int(label) for _, label in shuffled) == sorted(labels)
