"""The pickler of what the worker processes run: cloudpickle, plus zip archives reopened by path.

tensorpack forked its workers, so a dataflow holding an open ``zipfile.ZipFile`` (tensorpack's
SuperResolution example reads COCO's zip so) reached them as the parent's open archive. The
workers here are spawned and get the dataflow pickled, and an open file cannot be pickled. A
``ZipFile`` opened for reading from a path is a view of that file, so it goes as its path and
the worker opens the archive again: what it reads is what the fork's copy read. Any other open
file (an archive being written, one opened from a file object) still fails to pickle, with the
``InputError`` of :func:`trainstack.dataflow._worker_pool.pickle_payload` naming it.
"""
from __future__ import annotations

import io
import pickle
import zipfile
from typing import Any

import cloudpickle


def _reopen_zip(filename: str) -> zipfile.ZipFile:
    """The archive at ``filename`` opened for reading (in the worker)."""
    return zipfile.ZipFile(filename)


def _zip_opened_by_path(obj: object) -> str | None:
    """The path of ``obj`` if it is an open ``ZipFile`` read from a path, else None."""
    if not isinstance(obj, zipfile.ZipFile) or obj.mode != "r" or obj.fp is None:
        return None
    filename = obj.filename
    return filename if isinstance(filename, str) and getattr(obj, "_filePassed", 1) == 0 else None


class _PayloadPickler(cloudpickle.Pickler):  # type: ignore[misc]  # untyped
    def reducer_override(self, obj: Any) -> Any:
        filename = _zip_opened_by_path(obj)
        if filename is not None:
            return _reopen_zip, (filename,)
        return super().reducer_override(obj)


def dumps(obj: Any) -> bytes:
    """``obj`` pickled as cloudpickle does, a read-mode ``ZipFile`` opened from a path as that path."""
    with io.BytesIO() as buffer:
        _PayloadPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
        return buffer.getvalue()
