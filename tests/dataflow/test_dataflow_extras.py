"""The optional packages of trainstack-dataflow: ``import trainstack.dataflow`` imports none of
them, and a dataflow that needs a missing one raises an ``ImportError`` naming the extra to
install (simulated by hiding the package: ``sys.modules[name] = None`` makes its import fail)."""
from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

import trainstack.dataflow as ts


def test_importing_trainstack_dataflow_imports_no_optional_package():
    code = ("import sys, trainstack.dataflow; "
            "print(sorted({'lmdb', 'h5py', 'zmq', 'tensorflow', 'tensorpack'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"import trainstack.dataflow imported {out.stdout.strip()}"


def save_lmdb(tmp: Any) -> None:
    ts.LMDBSerializer.save(ts.DataFromList([[1]]), str(tmp / "db"))


def iterate_remote(tmp: Any) -> None:
    next(iter(ts.RemoteDataZMQ("ipc://@trainstack-never-bound")))


CASES: list[tuple[str, str, Callable[[Any], Any]]] = [
    ("lmdb", "LMDBSerializer", save_lmdb),
    ("lmdb", "LMDBData", lambda tmp: ts.LMDBSerializer.load(str(tmp), shuffle=False)),  # its reader
    ("lmdb", "LMDBData", lambda tmp: ts.LMDBData(str(tmp))),
    ("lmdb", "LMDBData", lambda tmp: ts.CaffeLMDB(str(tmp))),
    ("h5py", "HDF5Data", lambda tmp: ts.HDF5Data(str(tmp / "x.h5"), ["a"])),
    ("h5py", "HDF5Serializer", lambda tmp: ts.HDF5Serializer.save(ts.DataFromList([[1]]), str(tmp / "x.h5"), ["a"])),
    ("zmq", "send_dataflow_zmq", lambda tmp: ts.send_dataflow_zmq(ts.DataFromList([[1]]), "ipc://@trainstack-never-bound")),
    ("zmq", "RemoteDataZMQ", iterate_remote),
    ("tensorflow", "TFRecordSerializer",
     lambda tmp: ts.TFRecordSerializer.save(ts.DataFromList([[1]]), str(tmp / "r"))),
    ("tensorflow", "TFRecordSerializer", lambda tmp: list(ts.TFRecordSerializer.load(str(tmp / "r")))),
]
EXTRA = {"lmdb": r"trainstack-dataflow\[lmdb\]", "h5py": r"trainstack-dataflow\[hdf5\]",
         "zmq": r"trainstack-dataflow\[zmq\]", "tensorflow": "pip install tensorflow"}


@pytest.mark.parametrize("module, who, use", CASES, ids=[f"{m}-{w}-{i}" for i, (m, w, _) in enumerate(CASES)])
def test_a_missing_optional_package_is_an_import_error_naming_the_extra(tmp_path, monkeypatch, module, who, use):
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=f"{who} needs {module}: .*{EXTRA[module]}"):
        use(tmp_path)
