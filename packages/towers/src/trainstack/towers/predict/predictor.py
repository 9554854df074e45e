"""OnlinePredictor: run an inference tower of a trainer's model on NumPy arrays.

An inference tower is the tower function built under
``TowerContext(<name>, is_training=False)``: the same variables as the
training towers (the reuse rule forbids it to make new ones), so predictions
follow training as it goes. It is traced once, in a ``tf.function`` taking
the selected inputs.

Inputs the tower function takes but ``input_names`` leaves out are given
zeros: shaped by their spec, whose first dimension may be unknown, then
taking the batch size of the first given input that has one. None of the
outputs asked for may be computed from them (as in tensorpack, where such an
output needed an unfed placeholder): the traced graph is walked back from each
output, and one that reaches a left-out input makes the predictor refuse to be
built, naming both. Its other unknown dimensions (an image's height and width,
as HED's edge map) are 1 and stay unknown to the traced code, so a tower whose
outputs do not need the input traces as with a TF1 placeholder left unfed.

An input name may also name a tensor made inside the tower with
``tf.compat.v1.placeholder_with_default(default, shape, name=...)`` (TensorFlow's own op; an
optional input: tensorpack fed it through the session, e.g. a GAN's noise
``z``). The predictor then feeds it: its tower is built in a graph
(TensorFlow's own ``tf.compat.v1.wrap_function``) pruned at that tensor, so the given array
replaces the default and what only computed the default is not run. When it is
left out of ``input_names``, the tower computes its default as usual.
"""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from trainstack.callbacks import summary_collection_scope
from trainstack.inputs import InputSignatureError, check_datapoint
from trainstack.loop.checks import check_int

from ..tower.context import TowerContext
from ..tower.tower import TowerFunc
from ..tower.variable_creation import trace_creating_variables

__all__ = ["OnlinePredictor", "predict_device"]


def predict_device(index: int) -> str:
    """The device of predictor ``index``: ``/device:GPU:<index>`` when GPUs exist, else the CPU."""
    index = check_int("predict_device", "index", index, minimum=0)
    gpus = tf.config.list_logical_devices("GPU")
    if not gpus:
        return "/device:CPU:0"
    if index >= len(gpus):
        raise ValueError(f"predictor device {index} does not exist: this process sees {len(gpus)} GPU(s)")
    return f"/device:GPU:{index}"


def _names(what: str, names: Any) -> list[str]:
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, (list, tuple)) or not names or not all(isinstance(n, str) and n for n in names):
        raise TypeError(f"{what} must be a non-empty list of names, got {names!r}")
    return list(names)


class OnlinePredictor:
    """``predictor(*arrays) -> [np.ndarray, ...]``: one array per input name in, one per output name out.

    Built from ``tower_func`` as tower ``tower_name`` (inference mode) on
    ``device`` (None: TensorFlow's default placement). Output names are tensor
    names inside the tower (see :meth:`TowerHandle.get_tensor`); an unknown
    name fails here, when the predictor is built.
    """

    def __init__(self, tower_func: TowerFunc, input_names: Sequence[str], output_names: Sequence[str],
                 tower_name: str = "predict_tower0", device: str | None = None, index: int = 0) -> None:
        if not isinstance(tower_func, TowerFunc):
            raise TypeError(f"OnlinePredictor needs a TowerFunc, got {tower_func!r}")
        self.tower_func = tower_func
        self.input_names = _names("input_names", input_names)
        self.output_names = _names("output_names", output_names)
        self.tower_name = tower_name
        self.device = device
        signature = tower_func.input_signature
        by_name = {s.name: s for s in signature}
        dup = sorted({n for n in self.input_names if self.input_names.count(n) > 1})
        if dup:
            raise ValueError(f"predictor {tower_name!r}: inputs {dup} are given more than once")
        inner = [n for n in self.input_names if n not in by_name]
        if inner:
            self._build_with_inner_inputs(inner, index)
            return
        self.input_signature = tuple(by_name[n] for n in self.input_names)
        fillers = self._plan_fillers(signature)
        filled: dict[str, tf.Tensor] = {}  # the zeros given to each left-out input, when traced

        def predict(*given: tf.Tensor) -> list[tf.Tensor]:
            values = dict(zip(self.input_names, given))
            batch = next((tf.shape(t)[0] for t in given if t.shape.rank), None)
            filled.update({name: fill(batch) for name, fill in fillers.items()})
            inputs = [values.get(s.name, filled.get(s.name)) for s in signature]
            with summary_collection_scope(None), TowerContext(tower_name, is_training=False, index=index):
                tower_func(*inputs)
            handle = tower_func.towers[tower_name]
            return [tf.identity(handle.get_tensor(n)) for n in self.output_names]

        placement = tf.device(device) if device else contextlib.nullcontext()
        with placement:
            self._fn = tf.function(predict, input_signature=list(self.input_signature), autograph=False)
            # build now: a bad name, a new variable or an output that needs a left-out input fails here
            outputs = self._fn.get_concrete_function().structured_outputs
        self._refuse_outputs_of_left_out_inputs(outputs, filled)

    def _build_with_inner_inputs(self, inner: list[str], index: int) -> None:
        """Build a predictor some of whose inputs are ``placeholder_with_default`` tensors inside
        the tower: the tower is built in a ``wrap_function`` graph, pruned at those tensors."""
        tower_func, tower_name = self.tower_func, self.tower_name
        signature = list(tower_func.input_signature)
        placeholders: list[Any] = []

        def build(*inputs: tf.Tensor) -> list[tf.Tensor]:
            placeholders[:] = inputs
            with summary_collection_scope(None), TowerContext(tower_name, is_training=False, index=index):
                tower_func(*inputs)
            handle = tower_func.towers[tower_name]
            return [tf.identity(handle.get_tensor(n)) for n in self.output_names]

        placement = tf.device(self.device) if self.device else contextlib.nullcontext()
        with placement:
            if tower_func.first_tower is None:  # a new model: create its variables in a tf.function
                trace_creating_variables(build, signature, type(self).__name__)
            # TensorFlow's own API: the one public way to prune a traced function at a tensor
            wrapped = tf.compat.v1.wrap_function(build, signature=signature)
        handle = tower_func.towers[tower_name]
        feeds: dict[str, tf.Tensor] = {}
        for name in inner:
            try:
                tensor = handle.get_tensor(name)
            except KeyError:
                raise KeyError(
                    f"predictor {tower_name!r}: input {name!r} is neither an input of the tower function "
                    f"{[s.name for s in signature]} nor a tensor inside the tower; an optional input is "
                    f"made in the tower with tf.compat.v1.placeholder_with_default(default, shape, "
                    f"name={name!r})") from None
            if tensor.op.type not in ("PlaceholderWithDefault", "Placeholder"):
                raise ValueError(
                    f"predictor {tower_name!r}: input {name!r} is a {tensor.op.type} inside the tower, not "
                    "an input: TensorFlow 2 feeds only the tower function's inputs and tensors made with "
                    f"tf.compat.v1.placeholder_with_default(default, shape, name={name!r})")
            feeds[name] = tensor
        by_name = {s.name: s for s in signature}
        self.input_signature = tuple(
            by_name[n] if n in by_name else tf.TensorSpec(feeds[n].shape, feeds[n].dtype, n)
            for n in self.input_names)
        self._refuse_outputs_of_left_out_inputs(
            wrapped.structured_outputs,
            {spec.name: ph for spec, ph in zip(signature, placeholders) if spec.name not in self.input_names},
            fed=list(feeds.values()))
        pruned = wrapped.prune(feeds=[*placeholders, *feeds.values()], fetches=wrapped.structured_outputs)
        given_specs = self.input_signature
        names = self.input_names

        def predict(*given: tf.Tensor) -> list[tf.Tensor]:
            values = dict(zip(names, given))
            batch = next((tf.shape(t)[0] for t in given if t.shape.rank), None)
            args = [values[spec.name] if spec.name in values else _zeros_for(spec, batch) for spec in signature]
            return list(pruned(*args, *[values[n] for n in feeds]))

        with placement:
            self._fn = tf.function(predict, input_signature=list(given_specs), autograph=False)
            self._fn.get_concrete_function()

    @property
    def tf_function(self) -> Any:
        """The traced ``tf.function``: the input tensors (in ``input_names`` order) -> the list of
        output tensors. For composing the predictor into other functions (e.g. an export)."""
        return self._fn

    def _refuse_outputs_of_left_out_inputs(self, outputs: Sequence[tf.Tensor], left_out: dict[str, tf.Tensor],
                                           fed: Sequence[tf.Tensor] = ()) -> None:
        """Raise if an output (a graph tensor, in ``output_names`` order) is computed from one of
        ``left_out`` (input name -> the graph tensor standing for it): it would be computed from
        zeros. The walk follows the ops' data inputs back; tensors in ``fed`` are given values, so
        the walk stops there."""
        needs = {name: deps for name, out in zip(self.output_names, outputs)
                 if (deps := _reached(out, left_out, stop=fed))}
        if needs:
            said = "; ".join(f"output {name!r} is computed from {deps}" for name, deps in needs.items())
            raise InputSignatureError(
                f"predictor {self.tower_name!r}: {said}, not among input_names {self.input_names} (they "
                f"would be zeros, and the outputs meaningless); add them to input_names, or ask only for "
                f"outputs that do not need them")

    def _plan_fillers(self, signature: Sequence[tf.TensorSpec]) -> dict[str, Any]:
        """Zeros for each input left out of ``input_names`` (see :func:`_zeros_for`)."""
        return {spec.name: functools.partial(_zeros_for, spec) for spec in signature
                if spec.name not in self.input_names}

    def __call__(self, *arrays: Any) -> list[np.ndarray]:
        if len(arrays) != len(self.input_names):
            raise InputSignatureError(f"predictor {self.tower_name!r} takes {len(self.input_names)} arrays "
                                      f"{self.input_names}, got {len(arrays)}")
        checked = check_datapoint(list(arrays), self.input_signature, source=f"predictor {self.tower_name!r}")
        outputs = self._fn(*checked)
        return [np.asarray(o.numpy()) for o in outputs]

    def __repr__(self) -> str:
        return (f"OnlinePredictor({self.tower_name!r}, inputs={self.input_names}, "
                f"outputs={self.output_names})")


def _zeros_for(spec: tf.TensorSpec, batch: tf.Tensor | None) -> tf.Tensor:
    """Zeros standing for an input left out of a predictor's ``input_names``: of its shape where known,
    the given inputs' batch size for an unknown first dimension, 1 for any other unknown one; an
    unknown dimension stays unknown to the traced code (``placeholder_with_default``), as a TF1
    placeholder nobody fed did. Outputs computed from it are refused when the predictor is built."""
    if spec.shape.is_fully_defined():
        return tf.zeros(spec.shape, spec.dtype)
    if spec.shape.rank is None:
        return tf.compat.v1.placeholder_with_default(tf.zeros([], spec.dtype), None)
    dims = [d if d is not None else (batch if i == 0 and batch is not None else 1)
            for i, d in enumerate(spec.shape.as_list())]
    return tf.compat.v1.placeholder_with_default(tf.zeros(tf.stack(dims), spec.dtype), spec.shape)


def _reached(output: tf.Tensor, sources: dict[str, tf.Tensor], stop: Sequence[tf.Tensor] = ()) -> list[str]:
    """The names of ``sources`` that ``output`` is computed from, following data inputs back through
    its graph (an op that calls a function, e.g. a loop, counts as using all its inputs) and not
    past the tensors of ``stop``."""
    named = {t.ref(): name for name, t in sources.items()}
    seen = {t.ref() for t in stop}
    todo, found = [output], set()
    while todo:
        tensor = todo.pop()
        if tensor.ref() in seen:
            continue
        seen.add(tensor.ref())
        if tensor.ref() in named:
            found.add(named[tensor.ref()])
        else:
            todo.extend(tensor.op.inputs)
    return sorted(found)
