"""The ``evaluator`` task (Kubeflow TFJob's Evaluator replica): it trains nothing.

TensorFlow's convention, which TFJob follows, is an evaluator *outside* the
training cluster that evaluates the checkpoints the chief writes, as they
appear. In trainstack:

- every trainer refuses to run on an evaluator task (:func:`refuse_evaluator`:
  a ``ClusterSpecError`` naming the alternatives), so a script that builds a
  trainer on every task fails at once there instead of waiting for a peer;
- :func:`run_evaluator` is what such a task runs instead: it calls
  ``evaluate(checkpoint_path)`` for each new checkpoint in the shared log
  directory (``tf.train.checkpoints_iterator``) until the checkpoint of the last
  step appears (``last_step``, read from the loop state ModelSaver stores) or no
  new one came for ``timeout`` seconds. ``evaluate`` restores the checkpoint into
  whatever it needs (e.g. ``SmartInit(path)`` on a predictor) and reports; it
  runs on the evaluator's own device, so evaluation never slows the training.

Evaluating inside the training instead (``InferenceRunner`` as a chief-only
callback) needs no evaluator task.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from .cluster import ClusterSpec, ClusterSpecError

__all__ = ["refuse_evaluator", "run_evaluator"]

logger = logging.getLogger("trainstack.distributed")


def refuse_evaluator(spec: ClusterSpec, what: str) -> None:
    """Raise a ClusterSpecError when ``spec`` is an evaluator task: ``what`` trains nothing there."""
    if spec.is_evaluator:
        raise ClusterSpecError(
            f"{what} cannot run on {spec.task_name} (from {spec.source}): the evaluator task is not "
            "part of the training cluster and trains nothing. On that task call "
            "trainstack.distributed.run_evaluator(evaluate_fn, logdir) to evaluate each checkpoint the "
            "chief writes (see ClusterSpec.is_evaluator), or drop the evaluator task and evaluate in "
            "the training with an InferenceRunner callback")


def run_evaluator(evaluate: Callable[[str], Any], directory: str | os.PathLike, *,
                  last_step: int | None = None, timeout: float | None = 3600.0,
                  poll_seconds: float = 5.0) -> list[str]:
    """Call ``evaluate(path)`` for each new checkpoint in ``directory``; return the paths evaluated.

    Stops after the checkpoint whose loop state's ``global_step`` is ``last_step`` or more, or
    when no new checkpoint came for ``timeout`` seconds (None: never). A checkpoint written
    while ``evaluate`` ran on an older one may be skipped (only the latest is evaluated).
    """
    import tensorflow as tf  # noqa: PLC0415 - the cluster specs need no TensorFlow

    from trainstack.callbacks import load_loop_state  # noqa: PLC0415

    if not callable(evaluate):
        raise TypeError(f"run_evaluator(evaluate=...) must be a function of a checkpoint path, got "
                        f"{evaluate!r}")
    if last_step is not None and (not isinstance(last_step, int) or last_step < 0):
        raise ValueError(f"run_evaluator(last_step=...) must be a non-negative int or None, got "
                         f"{last_step!r}")
    directory = os.fspath(directory)
    done: list[str] = []
    for path in tf.train.checkpoints_iterator(directory, min_interval_secs=poll_seconds, timeout=timeout):
        logger.info("evaluator: evaluating %s.", path)
        evaluate(path)
        done.append(path)
        if last_step is not None:
            try:
                step = int(load_loop_state(path)["global_step"])
            except KeyError:
                continue  # not written by ModelSaver: only the timeout ends the watch
            if step >= last_step:
                break
    else:
        logger.info("evaluator: no new checkpoint in %s for %s s; stopping.", directory, timeout)
    return done
