"""A dataflow holding an open zip archive runs in spawned worker processes, as it ran in tensorpack's forked ones.

tensorpack's ``SuperResolution/data_sampler.py`` reads COCO's zip through a ``zipfile.ZipFile`` it opens in
``__init__`` and keeps; its workers were forked and inherited it. trainstack's are spawned and get the dataflow
pickled: a ``ZipFile`` opened for reading from a path goes as that path and is opened again there. Other open
files still cannot go, with the ``InputError`` naming the dataflow.
"""
from __future__ import annotations

import io
import zipfile

import pytest

from trainstack.dataflow import DataFromList, InputError, MapData, MultiProcessRunner, MultiProcessRunnerZMQ


def write_zip(path) -> dict[str, bytes]:
    contents = {f"train2017/{i:03d}.jpg": bytes([i]) * (100 + i) for i in range(6)}
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in contents.items():
            archive.writestr(name, data)
    return contents


@pytest.mark.parametrize("runner", [MultiProcessRunnerZMQ, MultiProcessRunner])
def test_a_dataflow_holding_a_read_mode_zip_file_reads_it_in_the_workers(tmp_path, runner):
    contents = write_zip(tmp_path / "images.zip")
    archive = zipfile.ZipFile(tmp_path / "images.zip")   # open, as data_sampler.py's ImageDataFromZIPFile keeps it
    ds = MapData(DataFromList([[name] for name in archive.namelist()], shuffle=False),
                 lambda dp: [dp[0], archive.read(dp[0])])
    parallel = runner(ds, num_prefetch=4, num_proc=2) if runner is MultiProcessRunner else runner(ds, 2)
    with parallel:
        parallel.reset_state()
        got = list(parallel) + list(parallel)   # 12 datapoints: one of the 2 workers gave at least its 6
    assert len(got) == 2 * len(contents)
    assert all(contents[name] == data for name, data in got)
    assert {name for name, _ in got} == set(contents)


def test_other_open_files_still_cannot_go_to_the_workers(tmp_path):
    write_zip(tmp_path / "images.zip")
    for archive in (zipfile.ZipFile(tmp_path / "new.zip", "w"),                       # being written
                    zipfile.ZipFile(io.BytesIO((tmp_path / "images.zip").read_bytes()))):   # from a file object
        ds = MapData(DataFromList([[0]], shuffle=False), lambda dp, archive=archive: [archive.namelist()])
        with pytest.raises(InputError, match="picklable"):
            MultiProcessRunnerZMQ(ds, 1).reset_state()
        archive.close()
