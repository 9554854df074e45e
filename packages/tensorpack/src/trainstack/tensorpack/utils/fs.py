"""tensorpack 0.11's ``tensorpack.utils.fs``: directories, downloads and dataset paths."""
from __future__ import annotations

import errno
import os
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

from trainstack.callbacks import logger

from .._replaced import unprovided
from .utils import execute_only_once

__all__ = ["mkdir_p", "download", "recursive_walk", "get_dataset_path", "normpath"]


def mkdir_p(dirname: str) -> None:
    """``mkdir -p``: make ``dirname`` and its parents; nothing if it exists."""
    if dirname is None:
        raise AssertionError("mkdir_p() takes a directory name, got None")
    if dirname == "" or os.path.isdir(dirname):
        return
    try:
        os.makedirs(dirname)
    except OSError as e:
        if e.errno != errno.EEXIST:
            raise


def download(url: str, dir: str, filename: str | None = None, expect_size: int | None = None) -> str:  # noqa: A002
    """Download ``url`` into ``dir`` (as ``filename``, by default the URL's last part); return the file's path.

    An existing file of ``expect_size`` bytes is kept; any other is downloaded again.
    """
    mkdir_p(dir)
    if filename is None:
        filename = url.split("/")[-1]
    fpath = os.path.join(dir, filename)
    if os.path.isfile(fpath):
        if expect_size is not None and os.stat(fpath).st_size == expect_size:
            logger.info(f"File {filename} exists! Skip download.")
            return fpath
        logger.warn(f"File {filename} exists. Will overwrite with a new download!")

    import tqdm  # noqa: PLC0415 - a dependency of trainstack-callbacks, loaded when used

    def hook(t: Any) -> Callable[..., None]:
        last_b = [0]

        def inner(b: int, bsize: int, tsize: int | None = None) -> None:
            if tsize is not None:
                t.total = tsize
            t.update((b - last_b[0]) * bsize)
            last_b[0] = b
        return inner

    try:
        with tqdm.tqdm(unit="B", unit_scale=True, miniters=1, desc=filename) as t:
            fpath, _ = urllib.request.urlretrieve(url, fpath, reporthook=hook(t))
        size = os.stat(fpath).st_size
    except OSError:
        logger.error(f"Failed to download {url}")
        raise
    if size <= 0:
        raise AssertionError(f"Downloaded an empty file from {url}!")
    if expect_size is not None and size != expect_size:
        logger.error(f"File downloaded from {url} does not match the expected size!")
        logger.error("You may have downloaded a broken file, or the upstream may have modified the file.")
    logger.info(f"Succesfully downloaded {filename}. {size} bytes.")
    return fpath


def recursive_walk(rootdir: str) -> Iterator[str]:
    """Every file below ``rootdir``, recursively (``os.walk`` order)."""
    for r, _dirs, files in os.walk(rootdir):
        for f in files:
            yield os.path.join(r, f)


def get_dataset_path(*args: str) -> str:
    """``$TENSORPACK_DATASET/<args...>`` (default ``~/tensorpack_data``, created if missing), as tensorpack's."""
    d = os.environ.get("TENSORPACK_DATASET", None)
    if d is None:
        d = os.path.join(os.path.expanduser("~"), "tensorpack_data")
        if execute_only_once():
            logger.warn(f"Env var $TENSORPACK_DATASET not set, using {d} for datasets.")
        if not os.path.isdir(d):
            mkdir_p(d)
            logger.info(f"Created the directory {d}.")
    if not os.path.isdir(d):
        raise AssertionError(d)
    return os.path.join(d, *args)


def normpath(path: str) -> str:
    """``os.path.normpath``, except for remote paths (containing ``://``), returned as they are."""
    return path if "://" in path else os.path.normpath(path)


__getattr__ = unprovided(__name__)
