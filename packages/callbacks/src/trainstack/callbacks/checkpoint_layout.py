"""The layout of trainstack's checkpoints, defined once: what the savers write, what the
initializers read back, and how a checkpoint's values are paired with a trainer's variables.

A checkpoint is ``tf.train.Checkpoint(**objects, **bookkeeping)`` (:func:`saver_checkpoint`):

- ``objects`` is ``trainer.checkpoint_objects`` (checked by :func:`checkpoint_objects_of`):
  what the trainer's owners declare, e.g. ``model`` (the model's layers, keyed as its owner
  declares them), ``optimizer``, ``rng``. A value's key is its object path from there,
  TensorFlow's way: ``model/fc/_kernel`` + :data:`VALUE_SUFFIX`.
- ``bookkeeping``: the savers' own entries under :data:`SAVER_KEYS` (``loop_state``,
  ``monitor_state``, ``best_stat``, and TensorFlow's ``save_counter``). They are not model
  values: a trainer's objects may not use these keys, and initializers leave them alone.

:func:`match_checkpoint` pairs a checkpoint's values with the variables reachable from a
trainer's objects as ``tf.train.Checkpoint.restore`` pairs them (children by name from the
root, through the object graph the checkpoint stores), *before* anything is restored, so
that what is missing on either side is known (and can be an error) first; its
:meth:`CheckpointMatch.restore` then restores through exactly the objects it paired. The
initializers (``trainstack.towers``' SessionInit) and the savers share this one definition.
"""
from __future__ import annotations

import collections
import os
from collections.abc import Mapping
from typing import Any

import keras
import tensorflow as tf

from . import tf_private
from .callback_state import MONITOR_STATE_KEY
from .variables import is_variable

__all__ = ["VALUE_SUFFIX", "OBJECT_GRAPH_KEY", "LOOP_STATE_KEY", "MONITOR_STATE_KEY", "BEST_STAT_KEY",
           "SAVE_COUNTER_KEY", "SAVER_KEYS", "value_name", "is_saver_key", "saver_checkpoint",
           "checkpoint_value_names", "NameBasedCheckpointError", "CheckpointMatch", "match_checkpoint",
           "walk", "escape", "is_variable", "checkpoint_variables", "display_name",
           "strip_tensor_suffix"]

#: What TensorFlow appends to a variable's object path to make its checkpoint key.
VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
#: The checkpoint entry holding the object graph (object-based checkpoints only).
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
#: The checkpoint key under which the loop counters are stored.
LOOP_STATE_KEY = "loop_state"
#: MinSaver's record of the statistic its checkpoint won with.
BEST_STAT_KEY = "best_stat"
#: tf.train.Checkpoint's own counter of its saves.
SAVE_COUNTER_KEY = "save_counter"
#: The checkpoint keys the savers write next to the model: bookkeeping, not model values (a
#: trainer's checkpoint_objects may not use them; initializers leave them alone).
SAVER_KEYS = frozenset({LOOP_STATE_KEY, MONITOR_STATE_KEY, BEST_STAT_KEY, SAVE_COUNTER_KEY})


def value_name(checkpoint_key: str) -> str:
    """A checkpoint key without :data:`VALUE_SUFFIX` (``model/fc/_kernel``)."""
    return checkpoint_key.removesuffix(VALUE_SUFFIX)


def is_saver_key(name: str) -> bool:
    """Whether a checkpoint key (or value name) is the savers' bookkeeping."""
    return name.split("/", 1)[0] in SAVER_KEYS


def saver_checkpoint(objects: Mapping[str, Any], **bookkeeping: Any) -> tf.train.Checkpoint:
    """The ``tf.train.Checkpoint`` a saver writes: the trainer's ``objects`` (checked by
    :func:`checkpoint_objects_of`) and the saver's ``bookkeeping`` (keys of :data:`SAVER_KEYS`)."""
    unknown = sorted(set(bookkeeping) - SAVER_KEYS)
    if unknown:
        raise ValueError(f"saver_checkpoint: bookkeeping keys must be among {sorted(SAVER_KEYS)}, "
                         f"got {unknown}")
    clash = sorted(set(objects) & set(bookkeeping))
    if clash:
        raise ValueError(f"saver_checkpoint: {clash} are both trainer objects and bookkeeping")
    return tf.train.Checkpoint(**objects, **bookkeeping)


def checkpoint_value_names(path: str | os.PathLike) -> list[str]:
    """The names (keys without :data:`VALUE_SUFFIX`) of the values a checkpoint holds besides the
    savers' bookkeeping and the object graph, sorted: what a trainer's variables can be set from."""
    return sorted(value_name(name) for name, _ in tf.train.list_variables(os.fspath(path))
                  if name != OBJECT_GRAPH_KEY and not is_saver_key(name))


# -- walking objects -----------------------------------------------------------------------------
def children(obj: Any) -> dict[str, Any]:
    """The trackable children of ``obj``, by local name (what a checkpoint key is made of)."""
    return tf.train.TrackableView.children(obj)


def escape(name: str) -> str:
    """A local name as it appears in checkpoint keys (TensorFlow's escaping)."""
    return name.replace(".", "..").replace("/", ".S")


def walk(objects: Mapping[str, Any], skip: frozenset[int] = frozenset()) -> dict[int, tuple[str, Any]]:
    """Every trackable reachable from ``objects`` (not through an object whose id is in
    ``skip``): id -> (shortest object path, the key a checkpoint gives it), breadth first."""
    found: dict[int, tuple[str, Any]] = {}
    queue = collections.deque((escape(k), obj) for k, obj in sorted(objects.items()))
    while queue:
        path, obj = queue.popleft()
        if id(obj) in found or id(obj) in skip:
            continue
        found[id(obj)] = (path, obj)
        if not is_variable(obj):
            queue.extend((f"{path}/{escape(name)}", child) for name, child in children(obj).items())
    return found


def checkpoint_variables(objects: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(object path, variable) for every variable reachable from ``objects``."""
    return [(path, obj) for path, obj in walk(objects).values() if is_variable(obj)]


def display_name(path: str, var: Any) -> str:
    """A variable's name in reports: its Keras path, or its object path under the checkpoint objects."""
    return var.path if isinstance(var, keras.Variable) else path


def strip_tensor_suffix(name: str) -> str:
    """``dense/kernel:0`` -> ``dense/kernel`` (TF1's tensor names, as tensorpack's checkpoints hold)."""
    return name[:-2] if name.endswith(":0") else name


# -- pairing a checkpoint with objects -------------------------------------------------------------
class NameBasedCheckpointError(ValueError):
    """A name-based (TF1, e.g. tensorpack) checkpoint: it has no object graph to pair values by."""


def _read_object_graph(reader: Any, path: str) -> Any:  # a TrackableObjectGraph
    if not reader.has_tensor(OBJECT_GRAPH_KEY):
        raise NameBasedCheckpointError(
            f"{path!r} is a name-based (TF1, e.g. tensorpack) checkpoint without an object graph")
    graph = tf_private.new_trackable_object_graph()
    graph.ParseFromString(reader.get_tensor(OBJECT_GRAPH_KEY))
    return graph


class CheckpointMatch:
    """How checkpoint ``path``'s values pair with the variables of ``objects``.

    ``variables``: id -> (object path, variable) for every variable reachable from
    ``objects``; ``found``: id -> (checkpoint key, variable) for those the checkpoint has a
    value for; ``missing``: (object path, variable) of the others; ``unused``: the names of
    the checkpoint's values (bookkeeping aside) that no object matched. Objects whose id is
    in ``skip`` (and what only they lead to) are left out on both sides. ``shapes``: the
    checkpoint's value shapes by key.
    """

    def __init__(self, path: str, objects: Mapping[str, Any], skip: frozenset[int] = frozenset(),
                 *, _reader: Any = None, _graph: Any = None) -> None:
        self.path = path
        self.objects = dict(objects)
        self.skip = frozenset(skip)
        self.reader = _reader if _reader is not None else tf.train.load_checkpoint(path)
        self.graph = _graph if _graph is not None else _read_object_graph(self.reader, path)
        self.shapes = self.reader.get_variable_to_shape_map()
        self.nodes = self._pair()
        self.variables = {vid: entry for vid, entry in walk(self.objects, self.skip).items()
                          if is_variable(entry[1])}
        self.found: dict[int, tuple[str, Any]] = {}
        for node_id, obj in self.nodes.items():
            attributes = self.graph.nodes[node_id].attributes
            if is_variable(obj) and attributes:
                self.found[id(obj)] = (attributes[0].checkpoint_key, obj)
        self.missing = [(path_, var) for vid, (path_, var) in self.variables.items() if vid not in self.found]
        self.unused = sorted(value_name(attr.checkpoint_key)
                             for node_id, node in enumerate(self.graph.nodes) if node_id not in self.nodes
                             for attr in node.attributes if not is_saver_key(attr.checkpoint_key))

    def _pair(self) -> dict[int, Any]:
        """Checkpoint node id -> object, children paired by name from the root as TensorFlow's
        restore pairs them (objects in ``skip`` left out, and what only they lead to)."""
        graph, objects = self.graph, self.objects
        matched: dict[int, Any] = {}
        queue = collections.deque((ref.node_id, objects[ref.local_name]) for ref in graph.nodes[0].children
                                  if ref.local_name in objects)
        while queue:
            node_id, obj = queue.popleft()
            if node_id in matched or id(obj) in self.skip:
                continue
            matched[node_id] = obj
            if not is_variable(obj):
                kids = children(obj)
                queue.extend((ref.node_id, kids[ref.local_name]) for ref in graph.nodes[node_id].children
                             if ref.local_name in kids)
        return matched

    def without(self, skip: frozenset[int]) -> CheckpointMatch:
        """The match with the objects of ``skip`` (ids) also left out."""
        return CheckpointMatch(self.path, self.objects, self.skip | frozenset(skip), _reader=self.reader,
                               _graph=self.graph)

    def restore(self, also_skip: frozenset[int] = frozenset()) -> None:
        """Restore the paired values into the objects with ``tf.train.Checkpoint``, leaving the
        objects of ``skip`` and ``also_skip`` (and what only they lead to) as they are."""
        skip = self.skip | frozenset(also_skip)
        objects = _without(self.objects, skip) if skip else self.objects
        tf.train.Checkpoint(**objects).restore(self.path).expect_partial()


def match_checkpoint(path: str | os.PathLike, objects: Mapping[str, Any],
                     skip: frozenset[int] = frozenset()) -> CheckpointMatch:
    """See :class:`CheckpointMatch`. ``objects`` must not use :data:`SAVER_KEYS`. Raises
    :class:`NameBasedCheckpointError` for a checkpoint without an object graph."""
    reserved = sorted(set(objects) & SAVER_KEYS)
    if reserved:
        raise ValueError(f"match_checkpoint: {reserved} are the savers' keys, not trainer objects")
    return CheckpointMatch(os.fspath(path), objects, frozenset(skip))


def _without(objects: Mapping[str, Any], skip: frozenset[int]) -> dict[str, Any]:
    """``objects`` with the objects in ``skip`` cut out: stand-ins replace every object on a way to them.

    ``tf.train.Checkpoint.restore`` restores whatever it can reach; handing it this view leaves the
    skipped objects (and what only they lead to) as they are.
    """
    leads_to_skip: dict[int, bool] = {}

    def dirty(obj: Any) -> bool:
        if id(obj) not in leads_to_skip:
            leads_to_skip[id(obj)] = False  # breaks cycles
            leads_to_skip[id(obj)] = not is_variable(obj) and any(
                id(child) in skip or dirty(child) for child in children(obj).values())
        return leads_to_skip[id(obj)]

    stand_ins: dict[int, Any] = {}

    def stand_in(obj: Any) -> Any:
        if id(obj) not in stand_ins:
            proxy = stand_ins[id(obj)] = tf_private.AutoTrackable()
            for name, child in children(obj).items():
                if id(child) not in skip:
                    setattr(proxy, name, stand_in(child) if dirty(child) else child)
        return stand_ins[id(obj)]

    return {key: stand_in(obj) if dirty(obj) else obj
            for key, obj in objects.items() if id(obj) not in skip}
