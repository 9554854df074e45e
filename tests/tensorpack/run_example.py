"""Run a ported tensorpack example as ``python SCRIPT ARGS...`` does, with its training made short.

    python run_example.py --max-epoch E --steps-per-epoch S SCRIPT [ARGS...]

The script runs as ``__main__`` (``runpy.run_path``) with ``sys.argv = [SCRIPT, *ARGS]``, in the
current directory. Before it starts, ``Trainer.train_with_defaults`` (trainstack.loop's, which
``launch_train_with_config(config, trainer)`` calls with the config's values, and which
tensorpack's GAN examples call themselves) is wrapped to train ``max_epoch=E`` epochs of
``steps_per_epoch=S`` steps, whatever the script asked: nothing else of the training, the
model or the data changes. tensorpack's examples train for hours by default; this is how a test
runs them for a few dozen steps without editing them.
"""
from __future__ import annotations

import argparse
import functools
import os
import runpy
import sys
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def capped(train_with_defaults: Any, max_epoch: int, steps_per_epoch: int) -> Any:
    """``train_with_defaults`` training ``max_epoch`` epochs of ``steps_per_epoch`` steps."""
    @functools.wraps(train_with_defaults)
    def wrapped(self: Any, **kwargs: Any) -> Any:
        print(f"run_example: max_epoch={max_epoch} steps_per_epoch={steps_per_epoch} (the script asked for "
              f"{kwargs.get('max_epoch')} and {kwargs.get('steps_per_epoch')})", flush=True)
        kwargs.update(max_epoch=max_epoch, steps_per_epoch=steps_per_epoch)
        return train_with_defaults(self, **kwargs)
    return wrapped


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-epoch", type=int, required=True)
    parser.add_argument("--steps-per-epoch", type=int, required=True)
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)

    from trainstack.loop import Trainer

    Trainer.train_with_defaults = capped(Trainer.train_with_defaults, args.max_epoch,  # type: ignore[method-assign]
                                         args.steps_per_epoch)
    sys.argv = [args.script, *args.args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))
    runpy.run_path(args.script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
