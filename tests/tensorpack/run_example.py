"""Run a ported tensorpack example as ``python SCRIPT ARGS...`` does, with its training made short.

    python run_example.py --max-epoch E --steps-per-epoch S SCRIPT [ARGS...]

The script runs as ``__main__`` (``runpy.run_path``) with ``sys.argv = [SCRIPT, *ARGS]``, in the
current directory. Before it starts, ``launch_train_with_config`` (as the script imports it from
``trainstack.tensorpack`` or ``trainstack.tensorpack.train``) is wrapped to set the config's
``max_epoch`` and ``steps_per_epoch`` to E and S: nothing else of the config, the model or the
data changes. tensorpack's examples train for hours by default; this is how a test runs them
for a few dozen steps without editing them.
"""
from __future__ import annotations

import argparse
import functools
import os
import runpy
import sys
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def capped(launch: Any, max_epoch: int, steps_per_epoch: int) -> Any:
    """``launch`` with the config's epochs and steps set to the given ones first."""
    @functools.wraps(launch)
    def launch_train_with_config(config: Any, trainer: Any) -> Any:
        config.max_epoch, config.steps_per_epoch = max_epoch, steps_per_epoch
        print(f"run_example: max_epoch={max_epoch} steps_per_epoch={steps_per_epoch}", flush=True)
        return launch(config, trainer)
    return launch_train_with_config


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-epoch", type=int, required=True)
    parser.add_argument("--steps-per-epoch", type=int, required=True)
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)

    import trainstack.tensorpack as tensorpack
    import trainstack.tensorpack.train as train

    launch = capped(train.launch_train_with_config, args.max_epoch, args.steps_per_epoch)
    tensorpack.launch_train_with_config = train.launch_train_with_config = launch
    sys.argv = [args.script, *args.args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))
    runpy.run_path(args.script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
