"""TFDatasetInput: a ``tf.data.Dataset`` consumed by an iterator inside the traced step.

Each tower's call takes the next element of one iterator (tf.function orders
the calls as they were traced), so every tower gets its own batch. The
dataset is repeated, pass after pass, so with the default
``steps_per_epoch`` (its cardinality) an epoch is exactly one pass.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import tensorflow as tf

from trainstack.loop import Callback

from .base import FeedfreeInput
from .dataflow import close_workers, dataflow_size, reset_dataflow
from .errors import EmptyDataFlowError, InputError, InputSignatureError
from .signature import DatapointCheck, normalize_signature

__all__ = ["TFDatasetInput", "dataflow_to_dataset"]


class TFDatasetInput(FeedfreeInput):
    """Inputs from the elements of ``dataset`` (one batch per element).

    An element is a tuple or list of tensors in signature order, a dict keyed
    by input name, or a single tensor when the signature has one input; each
    must have its input's dtype and a compatible shape (checked at setup). A
    dataflow instead of a dataset is converted with :func:`dataflow_to_dataset`.

    Give the finite dataset: it is repeated here, and its cardinality is
    :meth:`size`. An infinite dataset works too, but then pass
    ``steps_per_epoch``. A pass that yields nothing fails the step with an
    error naming this input rather than ending training silently.

    The iterator is created at setup and lives as long as the source: the
    traced step holds it, so ``reset_state`` does not rewind it (passes just
    continue). Built from a dataflow, the source stops the dataflow's worker
    processes when training ends, whatever its outcome (see :func:`close_workers`).
    """

    def __init__(self, dataset: Any) -> None:
        super().__init__()
        if isinstance(dataset, tf.data.Dataset):
            self.dataset, self.dataflow = dataset, None
        elif hasattr(dataset, "__iter__") and not isinstance(dataset, (str, bytes, Mapping)):
            self.dataset, self.dataflow = None, dataset
        else:
            raise TypeError(f"TFDatasetInput takes a tf.data.Dataset (or a dataflow), got {dataset!r} "
                            f"({type(dataset).__name__})")
        self._iterator: Any = None  # a tf.data iterator, made at setup
        self._may_be_empty = True  # whether a pass may yield nothing (unknown cardinality)
        self._stopped = threading.Event()  # set when training ends: the dataflow is not read any more

    def _setup(self, signature: tuple[tf.TensorSpec, ...]) -> None:
        if self.dataset is None:
            self.dataset = dataflow_to_dataset(self.dataflow, signature, source=self.name, stop=self._stopped)
        _check_element_spec(self.dataset.element_spec, signature, self.name)
        cardinality = int(self.dataset.cardinality())
        if cardinality == 0:
            raise EmptyDataFlowError(f"{self.name}: the dataset has no element: nothing to train on")
        # a dataset known to be non-empty never yields an empty pass: no per-step check needed
        self._may_be_empty = cardinality < 0 and cardinality != tf.data.INFINITE_CARDINALITY
        self._iterator = iter(self.dataset.repeat())

    def _get_callbacks(self) -> list[Callback]:
        return [] if self.dataflow is None else [_CloseWorkersAfterTraining(self)]

    def _size(self) -> int:
        if self.dataset is None:  # a dataflow, converted at setup
            return dataflow_size(self.dataflow, f"{self.name}'s dataflow")
        n = int(self.dataset.cardinality())
        if n == tf.data.INFINITE_CARDINALITY:
            raise InputError(
                f"{self.name}: the dataset is infinite, so one pass (the default steps_per_epoch) has "
                "no size; pass steps_per_epoch, or give the dataset without .repeat() (this input "
                "repeats it itself)")
        if n == tf.data.UNKNOWN_CARDINALITY:
            raise InputError(
                f"{self.name}: tf.data cannot tell the dataset's size (e.g. after filter() or "
                "from_generator()); pass steps_per_epoch, or declare it with "
                "dataset.apply(tf.data.experimental.assert_cardinality(n))")
        if n == 0:
            raise EmptyDataFlowError(f"{self.name}: the dataset has no element: nothing to train on")
        return n

    def _skip(self, n: int) -> bool:
        # the traced step holds this iterator: advance it (in one graph call), do not replace it
        _advance(self._iterator, tf.constant(n, tf.int64))
        return True

    def _get_input_tensors(self, tower_index: int) -> list[tf.Tensor]:
        if self._may_be_empty:
            element = self._iterator.get_next_as_optional()
            check = tf.debugging.Assert(
                element.has_value(),
                [f"{self.name}: the dataset yielded no element in a whole pass (EmptyDataFlowError); "
                 "an input needs at least one element per pass"])
            with tf.control_dependencies([check]):
                value = element.get_value()
        else:
            value = self._iterator.get_next()
        tensors = _flatten_element(value, self.input_signature)
        # a spec more precise than the dataset's shapes (e.g. a fixed batch size) is checked per step
        return [tf.ensure_shape(t, spec.shape) if _more_precise(spec.shape, t.shape) else t
                for t, spec in zip(tensors, self.input_signature)]


class _CloseWorkersAfterTraining(Callback):
    """Stops the worker processes of a TFDatasetInput's dataflow when training ends (ended or
    failed): tf.data's generator thread started them, and nothing else would stop them."""

    def __init__(self, source: TFDatasetInput) -> None:
        self.source = source

    def _default_name(self) -> str:
        return f"CloseWorkers({self.source.name})"

    def _after_train(self) -> None:
        self.source._stopped.set()
        close_workers(self.source.dataflow)


@tf.function
def _advance(iterator: Any, n: tf.Tensor) -> None:
    """Drop the next ``n`` elements of ``iterator``."""
    for _ in tf.range(n):
        iterator.get_next()


def _flatten_element(element: Any, signature: Sequence[tf.TensorSpec]) -> list[Any]:
    """An element (tuple/list, dict, or one tensor) as a list in signature order."""
    if isinstance(element, Mapping):
        return [element[s.name] for s in signature]
    if isinstance(element, (tuple, list)):
        return list(element)
    return [element]


def _more_precise(shape: tf.TensorShape, than: tf.TensorShape) -> bool:
    if shape.rank is None:
        return False
    if than.rank is None:
        return True
    return any(a is not None and b is None for a, b in zip(shape.as_list(), than.as_list()))


def _check_element_spec(element_spec: Any, signature: Sequence[tf.TensorSpec], source: str) -> None:
    names = [s.name for s in signature]
    if isinstance(element_spec, Mapping):
        keys = sorted(map(str, element_spec))
        if set(keys) != set(names):
            raise InputSignatureError(
                f"{source}: the dataset's elements have keys {keys}, the input signature expects "
                f"{names} (missing {sorted(set(names) - set(keys))}, unexpected {sorted(set(keys) - set(names))})")
    elif isinstance(element_spec, (tuple, list)):
        if len(element_spec) != len(signature):
            raise InputSignatureError(
                f"{source}: the dataset's elements have {len(element_spec)} components, the input "
                f"signature expects {len(signature)}: {names}")
    elif len(signature) != 1:
        raise InputSignatureError(
            f"{source}: the dataset's elements are a single {type(element_spec).__name__}, the input "
            f"signature expects {len(signature)} inputs: {names} (make elements tuples or dicts)")
    for spec, elem in zip(signature, _flatten_element(element_spec, signature)):
        if not isinstance(elem, tf.TensorSpec):
            raise InputSignatureError(
                f"{source}: input '{spec.name}' expects a dense tensor ({_spec_str(spec)}); the dataset "
                f"gives {elem!r}")
        if elem.dtype != spec.dtype:
            raise InputSignatureError(
                f"{source}: input '{spec.name}' expects {_spec_str(spec)}, the dataset gives dtype "
                f"{elem.dtype.name} (shape {elem.shape}); cast it with dataset.map()")
        if not spec.shape.is_compatible_with(elem.shape):
            raise InputSignatureError(
                f"{source}: input '{spec.name}' expects {_spec_str(spec)}, the dataset gives shape "
                f"{elem.shape} (dtype {elem.dtype.name})")


def _spec_str(spec: tf.TensorSpec) -> str:
    return f"dtype {spec.dtype.name} and shape {spec.shape}"


def dataflow_to_dataset(dataflow: Any, signature: Sequence[tf.TensorSpec], *,
                        source: str = "dataflow_to_dataset",
                        stop: threading.Event | None = None) -> tf.data.Dataset:
    """A ``tf.data.Dataset`` of one pass of ``dataflow``: tuples of tensors in signature order.

    Each datapoint is checked with :func:`check_datapoint_at` (an error names the
    input, its spec and the datapoint's position); iterating the dataset again starts a new pass.
    ``dataflow.reset_state()`` runs once, before the first pass. When the
    dataflow has ``__len__``, the dataset's cardinality is that length.
    The dataset runs the dataflow in this process (through ``tf.py_function``
    machinery), holding it as long as the dataset lives. ``source`` names the
    input in error messages. Once ``stop`` is set, the dataflow is not iterated any more
    (a pass in progress ends there): tf.data may still pull elements ahead in a thread of its
    own after the consumer is done, and that must not restart a closed dataflow's workers.
    """
    signature = normalize_signature(signature)
    what = f"{source}({type(dataflow).__name__})"
    check = DatapointCheck(signature, source=what)
    state = {"reset": False, "passes": 0}

    def one_pass():
        if stop is not None and stop.is_set():
            return
        if not state["reset"]:
            reset_dataflow(dataflow)
            state["reset"] = True
        pass_num, state["passes"] = state["passes"], state["passes"] + 1
        empty = True
        for index, dp in enumerate(dataflow):
            if stop is not None and stop.is_set():
                return
            empty = False
            yield tuple(check(pass_num, index, dp))
        if empty and not (stop is not None and stop.is_set()):
            raise EmptyDataFlowError(f"{what}: the dataflow yielded no datapoint in a whole pass; "
                                     "an input needs at least one datapoint per pass")

    dataset = tf.data.Dataset.from_generator(
        one_pass, output_signature=tuple(tf.TensorSpec(s.shape, s.dtype, name=s.name) for s in signature))
    try:
        size = len(dataflow)
    except TypeError:
        return dataset
    if size <= 0:
        raise EmptyDataFlowError(f"{what}: the dataflow has size {size}: nothing to train on")
    return dataset.apply(tf.data.experimental.assert_cardinality(int(size)))
