"""trainstack.dataflow.dataset.download: progress bar, checksum and size checks, temporary file
renamed only at the end, and a reader that downloads what is missing; the opener is faked."""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import struct
import urllib.error

import numpy as np
import pytest

from trainstack.dataflow import dataset
from trainstack.dataflow.dataset import downloads as download_mod


class FakeResponse(io.BytesIO):
    """What urlopen returns: a readable body with headers; fails after ``fail_after`` bytes if set."""

    def __init__(self, body: bytes, fail_after: int | None = None):
        super().__init__(body)
        self.headers = {"Content-Length": str(len(body))}
        self.fail_after = fail_after

    def read(self, size=-1):
        if self.fail_after is not None and self.tell() >= self.fail_after:
            raise ConnectionResetError("connection dropped")
        return super().read(size if self.fail_after is None else min(size, self.fail_after - self.tell()) or 1)


def serve(monkeypatch, files: dict[str, bytes], fail_after: int | None = None):
    """Fake opener serving ``files`` by URL; returns the list of URLs asked for."""
    asked = []

    def opener(url, timeout=60.0):
        asked.append(url)
        if url not in files:
            raise urllib.error.HTTPError(url, 404, "Not Found", {}, None)
        return FakeResponse(files[url], fail_after)
    monkeypatch.setattr(download_mod, "_urlopen", opener)
    return asked


BODY = bytes(range(256)) * 4000   # 1 MB: several reads of the 1 MiB chunk loop and a progress bar


def test_download_checks_md5_and_shows_progress(tmp_path, monkeypatch, capsys):
    serve(monkeypatch, {"http://x/a.bin": BODY})
    remote = dataset.RemoteFile("a.bin", "http://x/a.bin", md5=hashlib.md5(BODY).hexdigest(), size=len(BODY))
    path = dataset.download(remote, str(tmp_path / "d"))
    assert path == str(tmp_path / "d" / "a.bin")
    assert open(path, "rb").read() == BODY
    assert os.listdir(tmp_path / "d") == ["a.bin"]
    err = capsys.readouterr().err
    assert "a.bin" in err and "1.02M" in err          # tqdm's bar: the name and the bytes (unit_scale)


def test_download_checks_sha256(tmp_path, monkeypatch):
    serve(monkeypatch, {"http://x/a.bin": BODY})
    good = dataset.RemoteFile("a.bin", "http://x/a.bin", sha256=hashlib.sha256(BODY).hexdigest())
    assert open(dataset.download(good, str(tmp_path), progress=False), "rb").read() == BODY
    bad = dataset.RemoteFile("b.bin", "http://x/a.bin", sha256="0" * 64)
    with pytest.raises(dataset.ChecksumError, match="sha256"):
        dataset.download(bad, str(tmp_path), progress=False)
    assert sorted(os.listdir(tmp_path)) == ["a.bin"]


@pytest.mark.parametrize("remote", [
    dataset.RemoteFile("a.bin", "http://x/a.bin", md5="0" * 32),
    dataset.RemoteFile("a.bin", "http://x/a.bin", size=len(BODY) + 1),
], ids=["md5", "size"])
def test_a_bad_download_leaves_no_file(tmp_path, monkeypatch, remote):
    serve(monkeypatch, {"http://x/a.bin": BODY})
    with pytest.raises(dataset.ChecksumError, match="a.bin"):
        dataset.download(remote, str(tmp_path), progress=False)
    assert os.listdir(tmp_path) == []


def test_a_dropped_connection_leaves_no_file(tmp_path, monkeypatch):
    serve(monkeypatch, {"http://x/a.bin": BODY}, fail_after=3000)
    with pytest.raises(ConnectionResetError):
        dataset.download(dataset.RemoteFile("a.bin", "http://x/a.bin"), str(tmp_path), progress=False)
    assert os.listdir(tmp_path) == []


def _idx(magic_counts: bytes, payload: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as f:
        f.write(magic_counts + payload)
    return buf.getvalue()


def test_a_reader_downloads_missing_files_then_reads_them(tmp_path, monkeypatch):
    images = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    files = {"t10k-images-idx3-ubyte.gz": _idx(struct.pack(">IIII", 2051, 2, 28, 28), images.tobytes()),
             "t10k-labels-idx1-ubyte.gz": _idx(struct.pack(">II", 2049, 2), bytes([7, 3]))}
    base = "http://mirror.test/mnist/"
    asked = serve(monkeypatch, {base + k: v for k, v in files.items()})
    monkeypatch.setattr(dataset.Mnist, "_SOURCE_URL", base)
    monkeypatch.setattr(dataset.Mnist, "_MD5", {k: hashlib.md5(v).hexdigest() for k, v in files.items()})
    ds = dataset.Mnist("test", shuffle=False, dir=str(tmp_path / "mnist"))
    ds.reset_state()
    assert [int(label) for _, label in ds] == [7, 3]
    np.testing.assert_array_equal(next(iter(ds))[0], images[0] / np.float32(255))
    assert sorted(os.listdir(tmp_path / "mnist")) == sorted(files)
    assert asked == [base + "t10k-images-idx3-ubyte.gz", base + "t10k-labels-idx1-ubyte.gz"]
    dataset.Mnist("test", dir=str(tmp_path / "mnist"))       # present now: nothing asked again
    assert len(asked) == 2


def test_a_corrupt_download_is_a_checksum_error_not_a_missing_file(tmp_path, monkeypatch):
    base = "http://yann.lecun.com/exdb/mnist/"
    serve(monkeypatch, {base + "t10k-images-idx3-ubyte.gz": b"not mnist"})
    with pytest.raises(dataset.ChecksumError, match="md5 .* expected 9fb629c4189551a2d022fa330f9573f3"):
        dataset.Mnist("test", dir=str(tmp_path))
    assert os.listdir(tmp_path) == []
