"""Download a dataset file with a progress bar and a checksum, or fail naming what to fetch by hand.

The file is written to a temporary name beside its destination and renamed only once its size
and checksum agree, so an interrupted or corrupt download never leaves a file that looks complete.
"""
from __future__ import annotations

import hashlib
import os
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import tqdm

__all__ = ["RemoteFile", "DatasetNotFoundError", "ChecksumError", "download", "ensure_files", "extract_tar"]

_CHUNK = 1 << 20


@dataclass(frozen=True)
class RemoteFile:
    """A file of a dataset: its name, where to get it and how to check it.

    ``md5``/``sha256`` are the published sums (None where none is known: then ``size``, when
    given, is what is checked).
    """
    filename: str
    url: str
    md5: str | None = None
    sha256: str | None = None
    size: int | None = None


class DatasetNotFoundError(FileNotFoundError):
    """A dataset's files are not on disk and could not be downloaded."""


class ChecksumError(OSError):
    """A downloaded file's size or checksum is not the published one."""


def _urlopen(url: str, timeout: float = 60.0) -> Any:
    """The opener :func:`download` uses (tests replace it)."""
    return urllib.request.urlopen(url, timeout=timeout)


def _check(path: str, remote: RemoteFile) -> None:
    size = os.path.getsize(path)
    if size == 0:
        raise ChecksumError(f"downloaded an empty file from {remote.url}")
    if remote.size is not None and size != remote.size:
        raise ChecksumError(f"{remote.filename} from {remote.url} has {size} bytes, expected {remote.size}")
    for algo in ("sha256", "md5"):
        expected = getattr(remote, algo)
        if expected is None:
            continue
        digest = hashlib.new(algo)
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(_CHUNK), b""):
                digest.update(block)
        if digest.hexdigest() != expected.lower():
            raise ChecksumError(f"{remote.filename} from {remote.url} has {algo} {digest.hexdigest()}, "
                                f"expected {expected}: a broken download, or the file changed upstream")


def download(remote: RemoteFile, directory: str, *, progress: bool = True) -> str:
    """Download ``remote`` into ``directory`` (created if missing) and return its path.

    The bytes go to a temporary file in ``directory`` (tqdm shows the progress), are checked
    against ``remote``'s size and sums, then renamed to ``remote.filename``; on any error the
    temporary file is removed and the error raised (``ChecksumError`` for a bad file, the
    opener's ``OSError``/``URLError`` otherwise).
    """
    os.makedirs(directory, exist_ok=True)
    dest = os.path.join(directory, remote.filename)
    fd, tmp = tempfile.mkstemp(prefix=f".{remote.filename}.", suffix=".part", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out, _urlopen(remote.url) as response:
            total = response.headers.get("Content-Length") if getattr(response, "headers", None) else None
            with tqdm.tqdm(total=int(total) if total else remote.size, unit="B", unit_scale=True,
                           miniters=1, desc=remote.filename, disable=not progress) as bar:
                for block in iter(lambda: response.read(_CHUNK), b""):
                    out.write(block)
                    bar.update(len(block))
        _check(tmp, remote)
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return dest


def ensure_files(dataset: str, directory: str, files: Sequence[RemoteFile],
                 *, present: Sequence[str] | None = None) -> list[str]:
    """The paths of ``files`` in ``directory``, downloading those missing.

    ``present`` names what must exist instead of the downloads themselves (the extracted
    folder of an archive): when they all exist nothing is downloaded. A failed download
    raises :class:`DatasetNotFoundError` naming the files expected, where, and their URLs.
    """
    paths = [os.path.join(directory, f.filename) for f in files]
    wanted = [os.path.join(directory, p) for p in present] if present is not None else paths
    if all(os.path.exists(p) for p in wanted):
        return paths
    for remote, path in zip(files, paths):
        if os.path.isfile(path):
            continue
        try:
            download(remote, directory)
        except (urllib.error.URLError, OSError) as e:
            if isinstance(e, ChecksumError):
                raise
            listing = "\n".join(f"  {f.filename}  <-  {f.url}" for f in files)
            raise DatasetNotFoundError(
                f"{dataset}: {', '.join(wanted)} not found, and downloading {remote.url} failed ({e}).\n"
                f"Put these files in {directory} (or point $TRAINSTACK_DATASET / $TENSORPACK_DATASET, "
                f"or the reader's dir argument, at a directory that has them):\n{listing}") from e
    return paths


def extract_tar(path: str, directory: str) -> None:
    """Extract a downloaded tarball into ``directory``, refusing members that would land outside it."""
    with tarfile.open(path, "r:*") as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(directory, filter="data")
            return
        root = os.path.realpath(directory)
        for member in tar.getmembers():
            target = os.path.realpath(os.path.join(directory, member.name))
            if os.path.commonpath([root, target]) != root or member.issym() or member.islnk():
                raise ValueError(f"{path}: refusing to extract {member.name!r} outside {directory}")
        tar.extractall(directory)
