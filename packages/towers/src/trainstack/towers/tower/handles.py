"""TowerHandle and TowerHandles: what each build of a tower left behind, read by name later."""
from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import tensorflow as tf

if TYPE_CHECKING:
    from .context import TowerContext
    from .tower import TowerFunc

__all__ = ["TowerHandle", "TowerHandles"]

_OUTPUT_INDEX = re.compile(r"^(.*):([0-9]+)$")


class TowerHandle:
    """What one build of a tower left behind: its context, inputs, outputs and named tensors."""

    def __init__(self, ctx: TowerContext, inputs: Sequence[Any], input_signature: Sequence[tf.TensorSpec],
                 tower_func: TowerFunc | None = None):
        self.ctx = ctx
        #: the tower function that built this tower (None for a handle made by hand)
        self.tower_func = tower_func
        self.inputs = list(inputs)
        self.outputs: Any = None
        self._input_names = [s.name for s in input_signature]
        # TensorFlow's own API: the graph being traced (TF2 exports no other accessor)
        self._graph = None if tf.executing_eagerly() else tf.compat.v1.get_default_graph()

    @property
    def name(self) -> str:
        return self.ctx.name

    def get_tensor(self, name: str) -> tf.Tensor:
        """The tensor called ``name`` inside this tower (``"accuracy"`` for ``tf.identity(x,
        name="accuracy")``), else the input with that spec name, else a tensor of that full
        name elsewhere in the same graph. ``"name:1"`` selects an op's second output."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"tensor names are non-empty strings, got {name!r}")
        match = _OUTPUT_INDEX.match(name)
        op_name, index = (match.group(1), int(match.group(2))) if match else (name, 0)
        graph = self._graph
        if graph is not None and self.ctx.ns_name:
            found = _graph_tensor(graph, f"{self.ctx.ns_name}/{op_name}", index)
            if found is not None:
                return found
        if op_name in self._input_names and index == 0:
            return self.inputs[self._input_names.index(op_name)]
        if graph is not None:
            found = _graph_tensor(graph, op_name, index)
            if found is not None:
                return found
        raise KeyError(self._missing_message(name))

    def get_tensors(self, names: Sequence[str]) -> list[tf.Tensor]:
        return [self.get_tensor(n) for n in names]

    def available_names(self) -> list[str]:
        """Names :meth:`get_tensor` resolves in this tower (inputs, then the tower's ops)."""
        names = list(self._input_names)
        if self._graph is not None and self.ctx.ns_name:
            prefix = self.ctx.ns_name + "/"
            names += [op.name[len(prefix):] for op in self._graph.get_operations()
                      if op.name.startswith(prefix) and op.outputs]
        return names

    def _missing_message(self, name: str) -> str:
        if self._graph is None:
            return (f"tower {self.name!r} was built eagerly: only its inputs "
                    f"{self._input_names} can be looked up by name, not {name!r}")
        names = self.available_names()
        top = [n for n in names if "/" not in n]
        nested = len(names) - len(top)
        return (f"no tensor named {name!r} in tower {self.name!r}. Name it in the tower function, "
                f"e.g. tf.identity(x, name={name.split(':')[0]!r}). Available: {top}"
                + (f" and {nested} nested names (e.g. 'dense/MatMul')" if nested else ""))

    def __repr__(self) -> str:
        return f"TowerHandle({self.name!r}, is_training={self.ctx.is_training})"


def _graph_tensor(graph: Any, op_name: str, index: int) -> tf.Tensor | None:
    try:
        op = graph.get_operation_by_name(op_name)
    except (KeyError, ValueError):
        return None
    return op.outputs[index] if index < len(op.outputs) else None


class TowerHandles:
    """The latest :class:`TowerHandle` of each tower a TowerFunc built, by tower name.

    Every trace of a step rebuilds its towers, so a name maps to its newest build.
    """

    def __init__(self) -> None:
        self._handles: dict[str, TowerHandle] = {}

    def _add(self, handle: TowerHandle) -> None:
        self._handles.pop(handle.name, None)
        self._handles[handle.name] = handle

    def __getitem__(self, name: str) -> TowerHandle:
        try:
            return self._handles[name]
        except KeyError:
            raise KeyError(f"no tower named {name!r} was built; built: {list(self._handles)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._handles

    def __iter__(self) -> Iterator[TowerHandle]:
        return iter(list(self._handles.values()))

    def __len__(self) -> int:
        return len(self._handles)

    def training(self) -> list[TowerHandle]:
        """Handles of the training towers, by index."""
        return sorted((h for h in self._handles.values() if h.ctx.is_training), key=lambda h: h.ctx.index)

    def inference(self) -> list[TowerHandle]:
        """Handles of the inference towers, by index."""
        return sorted((h for h in self._handles.values() if not h.ctx.is_training),
                      key=lambda h: h.ctx.index)
