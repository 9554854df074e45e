"""tensorpack's scripts train inside ``with tf.Graph().as_default():``; this layer's trainers run eagerly there.

tensorpack's scripts written for TF1 sessions often train inside
``with tf.Graph().as_default():`` (or ``with tf.Session():``). trainstack's trainers run
eagerly and trace their steps with ``tf.function``; :func:`eager_execution` runs this layer's
trainers' entry points so, inside such a block too (the block's graph stays the default graph
for the script's own code, and what the script built in it stays usable). The core's trainers
refuse such a block (``trainstack.towers.tower.eager``); a process that turned eager execution
off cannot train with either.
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import tensorflow as tf

from trainstack.callbacks import tf_private
from trainstack.towers import check_eager_execution

__all__ = ["eager_execution"]

logger = logging.getLogger("trainstack.tensorpack")

_told: set[str] = set()


@contextlib.contextmanager
def eager_execution(who: str) -> Iterator[None]:
    """Run the block eagerly: as it is outside any graph, or, inside a user's
    ``with tf.Graph().as_default():`` block, as it would run outside it. Refused (with
    ``check_eager_execution``'s error) when eager execution is off for the process."""
    check_eager_execution(who)
    if tf.executing_eagerly() or tf.inside_function():
        yield
        return
    if who not in _told:
        _told.add(who)
        logger.info("%s runs eagerly, as outside the `with tf.Graph().as_default():` block around it: "
                    "trainstack builds its own graph with tf.function; the block's graph stays the "
                    "default for the script's own code", who)
    # TensorFlow's own switch into eager mode: the only way out of a graph that a user made the
    # default with Graph.as_default()
    with tf_private.eager_mode():
        yield
