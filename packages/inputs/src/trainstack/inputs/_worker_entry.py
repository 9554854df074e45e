"""Entry point of a MultiProcessDataFlow worker process, run with ``runpy.run_path``.

A worker needs none of TensorFlow, but importing anything under
``trainstack.inputs`` runs the package's ``__init__``, which imports it
(seconds of start-up and about half a gigabyte per worker). This file imports
only the standard library; it loads the worker's modules (``_worker``,
``codec``, ``dataflow``, ``errors``, none of which imports TensorFlow) from
this directory as a private package, without that ``__init__``. The user's
dataflow, unpickled in the worker, imports whatever it imports itself.
"""
import importlib
import importlib.util
import os
import sys

PACKAGE = "_trainstack_inputs_worker"
RUN_NAME = "__trainstack_worker__"


def load_worker_module():
    """The ``_worker`` module, loaded from this directory as ``_trainstack_inputs_worker._worker``."""
    if PACKAGE not in sys.modules:
        here = os.path.dirname(os.path.abspath(__file__))
        spec = importlib.util.spec_from_loader(PACKAGE, loader=None, is_package=True)
        spec.submodule_search_locations = [here]
        package = importlib.util.module_from_spec(spec)
        package.__path__ = [here]
        sys.modules[PACKAGE] = package
    return importlib.import_module(f"{PACKAGE}._worker")


if __name__ == RUN_NAME:
    # WORKER_ARGS is given by the parent through runpy.run_path(init_globals=...)
    load_worker_module().run_worker(**WORKER_ARGS)  # noqa: F821
