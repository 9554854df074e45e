"""Import an optional package on first use, with an error that names the extra to install.

``import trainstack.dataflow`` imports none of lmdb, h5py, pyzmq or TensorFlow: the
dataflows that need one import it here, inside the call that needs it.
"""
from __future__ import annotations

import importlib
from types import ModuleType

# the import name of each optional package, and how to install it
_INSTALL = {
    "lmdb": "pip install 'trainstack-dataflow[lmdb]'",
    "h5py": "pip install 'trainstack-dataflow[hdf5]'",
    "zmq": "pip install 'trainstack-dataflow[zmq]'",
    "tensorflow": "pip install tensorflow (or trainstack-inputs, which depends on it)",
}


def require(module: str, who: str) -> ModuleType:
    """The module ``module``, imported now; an ``ImportError`` naming ``who`` and the install
    command when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"{who} needs {module}: {_INSTALL[module]}") from e
