"""What a custom trainer's ``__init__`` records besides its towers (see :mod:`.recording`): its
optimizations (``opt.minimize`` -> :class:`GraphOp`, ordered by ``tf.control_dependencies``), the
values it combines from the towers (``tf.add_n``, ``+ - * /`` -> :class:`RecordedValue`), and the
traced step a GraphOp becomes."""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import tensorflow as tf

from trainstack.callbacks import summary_collection_scope
from trainstack.callbacks.variables import variable_name
from trainstack.towers import TowerContext
from trainstack.towers.tower.gradproc import check_optimizer, unwrap_optimizer
from trainstack.towers.tower.step import TracedStep

from .recording import SUPPORTED_FORM, GraphBuildError, _current_recorder
from .switch import Patch
from .train_optimizers import adapt_optimizer

if TYPE_CHECKING:
    from .recording import GraphRecorder

__all__ = ["minimize", "control_dependencies", "GraphOp", "RecordedValue", "trace_step", "PATCHES"]

logger = logging.getLogger("trainstack.tensorpack")


def trace_step(recorder: GraphRecorder, target: GraphOp) -> TracedStep:
    """The traced step of ``target``: the recorded towers built on the input's next batch, then
    the optimizations it depends on and its own, in order."""
    order: list[GraphOp] = []

    def visit(op: GraphOp, path: tuple) -> None:
        if op in order:
            return
        if op in path:
            raise GraphBuildError(f"{op.name} depends on itself through control dependencies")
        for dep in op.deps:
            visit(dep, path + (op,))
        order.append(op)

    visit(target, ())
    trainer = recorder.trainer
    source = trainer.input
    towers = recorder.towers
    main = next((k for k, r in enumerate(towers) if r.is_training), 0)

    def body(feeds: Any, fetch_names: tuple[str, ...]) -> tuple[Any, dict[str, Any]]:
        graph = tf.compat.v1.get_default_graph()
        built, handles = [], []
        with tf.GradientTape(persistent=True) as tape, source.tracing(feeds):
            for k, record in enumerate(towers):
                inputs = source.get_input_tensors(k)
                collection = trainer.summary_collection if k == main else None
                before = len(graph.get_operations())
                with tf.device(record.device or None), summary_collection_scope(collection), \
                        TowerContext(record.name, is_training=record.is_training, index=record.index):
                    record.tower_func(*inputs)
                ops = [op for op in graph.get_operations()[before:] if op.type != "Placeholder"]
                if [op.type for op in ops] != [op.type for op in record.ops]:
                    raise GraphBuildError(
                        f"tower {record.name!r} built a different graph when traced for step "
                        f"{target.name} ({len(ops)} ops) than in {type(trainer).__name__}.__init__ "
                        f"({len(record.ops)} ops): the tower function must build the same graph "
                        "every time it is called")
                built.append(ops)
                handles.append(record.tower_func.towers[record.name])
            # losses combined across towers (tf.add_n of the towers' costs) are computed
            # under the tape too
            losses = [op.loss.evaluate(built) for op in order]
        output = None
        for op, loss in zip(order, losses):
            output = op.apply(tape, loss)
        del tape
        handle = handles[main]
        return output, {name: handle.get_tensor(name) for name in fetch_names}

    step = TracedStep(body, source.feed_signature(), name=target.name)
    step.trace(())
    return step


class GraphOp:
    """An optimization recorded by :func:`minimize` while a trainer's ``__init__`` built its graph.

    A step (it implements the loop's ``FetchableStep``): ``trainer.hooked_run(op)``
    runs the recorded towers on the next batch and applies the optimizations ``op``
    depends on (``tf.control_dependencies``), then its own; returns its loss.
    """

    def __init__(self, recorder: GraphRecorder, optimizer: Any, processors: list, loss: RecordedValue,
                 variables: list, name: str, deps: list[GraphOp]) -> None:
        self.recorder = recorder
        self.optimizer = optimizer
        self.processors = processors
        self.loss_name = loss.name
        self.loss = loss
        self.variables = variables
        self.name = name
        self.deps = deps
        self._step: TracedStep | None = None

    def __call__(self) -> None:
        # eager tf.control_dependencies([op]) calls the callables it is given; in the trainer's
        # __init__ the TF1 room handles the block itself (see control_dependencies below)
        raise GraphBuildError(
            f"tf.control_dependencies([{self.name}]) outside {type(self.recorder.trainer).__name__}.__init__: "
            "a recorded minimize() orders only the minimize() calls made in the same __init__, inside "
            "the block")

    @property
    def step(self) -> TracedStep:
        """The traced step (traced at the end of the trainer's ``__init__``, or when first run)."""
        if self._step is None:
            self._step = trace_step(self.recorder, self)
        return self._step

    def run_with_fetches(self, args: tuple, fetches: Sequence[str], feeds: Any) -> tuple[Any, Any]:
        return self.step.run_with_fetches(args, fetches, feeds)

    def apply(self, tape: tf.GradientTape, loss: tf.Tensor) -> tf.Tensor:
        grads = tape.gradient(loss, self.variables)
        pairs = [(g, v) for g, v in zip(grads, self.variables) if g is not None]
        unused = [variable_name(v) for g, v in zip(grads, self.variables) if g is None]
        if unused:
            logger.warning("%s: %s does not depend on %s; they are not updated", self.name, self.loss_name,
                           ", ".join(unused))
        if not pairs:
            raise GraphBuildError(f"{self.name}: loss {self.loss_name} depends on none of its var_list")
        for proc in self.processors:
            pairs = proc.process(pairs)
        self.optimizer.apply_gradients(pairs)
        return loss

    def __repr__(self) -> str:
        return f"GraphOp({self.name!r}, loss={self.loss_name!r}, {len(self.variables)} variables)"


class RecordedValue:
    """A value a trainer's ``__init__`` computed from the towers it recorded: a tower's tensor, or
    a combination of several (tensorpack's multi-GPU GAN averages the towers' costs,
    ``tf.add_n([c[0] for c in cost_list]) * (1.0 / num_gpu)``), made again from the towers built
    in each traced step. :func:`minimize` takes it as its loss. Combinations supported: ``tf.add_n``
    and ``+ - * /`` (and unary ``-``) with numbers or other recorded values."""

    def __init__(self, recorder: GraphRecorder, evaluate: Any, name: str, towers: tuple[int, ...]) -> None:
        self.recorder = recorder
        self._evaluate = evaluate
        self.name = name
        #: the recorded towers it is computed from
        self.towers = towers

    def evaluate(self, built: list) -> tf.Tensor:
        """The value, from the ops of the towers built in this trace (``built[k]``: tower ``k``'s)."""
        return self._evaluate(built)

    def _combine(self, other: Any, fn: Any, symbol: str, reverse: bool = False) -> RecordedValue:
        operand = _operand(self.recorder, other, f"a recorded value {symbol} {other!r:.60}")
        a, b = (operand, self) if reverse else (self, operand)
        towers = tuple(sorted(set(self.towers) | set(operand.towers)))
        return RecordedValue(self.recorder, lambda built: fn(a.evaluate(built), b.evaluate(built)),
                             f"({a.name} {symbol} {b.name})", towers)

    def __add__(self, other: Any) -> RecordedValue:
        return self._combine(other, lambda x, y: x + y, "+")

    def __radd__(self, other: Any) -> RecordedValue:
        return self._combine(other, lambda x, y: x + y, "+", reverse=True)

    def __sub__(self, other: Any) -> RecordedValue:
        return self._combine(other, lambda x, y: x - y, "-")

    def __rsub__(self, other: Any) -> RecordedValue:
        return self._combine(other, lambda x, y: x - y, "-", reverse=True)

    def __mul__(self, other: Any) -> RecordedValue:
        return self._combine(other, lambda x, y: x * y, "*")

    def __rmul__(self, other: Any) -> RecordedValue:
        return self._combine(other, lambda x, y: x * y, "*", reverse=True)

    def __truediv__(self, other: Any) -> RecordedValue:
        return self._combine(other, lambda x, y: x / y, "/")

    def __rtruediv__(self, other: Any) -> RecordedValue:
        return self._combine(other, lambda x, y: x / y, "/", reverse=True)

    def __neg__(self) -> RecordedValue:
        return RecordedValue(self.recorder, lambda built: -self.evaluate(built), f"-{self.name}", self.towers)

    def __repr__(self) -> str:
        return f"RecordedValue({self.name!r}, towers={list(self.towers)})"


def _operand(recorder: GraphRecorder, x: Any, what: str) -> RecordedValue:
    """``x`` as a RecordedValue: itself, a recorded tower's tensor, or a constant."""
    if isinstance(x, RecordedValue):
        return x
    if isinstance(x, tf.Tensor) and tf.is_symbolic_tensor(x):
        recorded = _recorded(recorder, x)
        if recorded is None:
            raise GraphBuildError(f"{what}: {x!r:.80} is a graph tensor no recorded tower built; in a "
                                  "trainer's __init__ only the towers' tensors can be combined")
        return recorded
    try:
        constant = tf.constant(x) if not isinstance(x, tf.Tensor) else x
    except (TypeError, ValueError) as e:
        raise GraphBuildError(f"{what}: cannot combine {x!r:.80} with the towers' tensors") from e
    return RecordedValue(recorder, lambda built: constant, repr(x), ())


def _recorded(recorder: GraphRecorder, tensor: tf.Tensor) -> RecordedValue | None:
    """A tensor a recorded tower built, as a :class:`RecordedValue`; None for any other."""
    located = recorder.find(tensor)
    if located is None:
        return None
    k, position, index = located
    return RecordedValue(recorder, lambda built: built[k][position].outputs[index], tensor.name, (k,))


def _is_recorded(recorder: GraphRecorder, x: Any) -> bool:
    return isinstance(x, RecordedValue) or (
        isinstance(x, tf.Tensor) and tf.is_symbolic_tensor(x) and recorder.find(x) is not None)


def _add_n(original: Any, frame: Any, inputs: Any, name: str | None = None) -> Any:
    """``tf.add_n`` while a trainer's ``__init__`` records its graph, on the towers' tensors
    (tensorpack's multi-GPU GAN sums the towers' costs): a :class:`RecordedValue`. Elsewhere
    TensorFlow's own."""
    recorder = _current_recorder() if frame.tower is None else None
    items = list(inputs) if isinstance(inputs, (list, tuple)) else None
    if recorder is None or not items or not any(_is_recorded(recorder, x) for x in items):
        return original(inputs, name=name)
    values = [_operand(recorder, x, "tf.add_n()") for x in items]
    towers = tuple(sorted({k for v in values for k in v.towers}))
    return RecordedValue(recorder, lambda built: original([v.evaluate(built) for v in values], name=name),
                         name or "add_n(" + ", ".join(v.name for v in values) + ")", towers)


#: ``tf.add_n`` of the towers' tensors in a trainer's ``__init__`` (see :func:`_add_n`)
#: ``tf.add_n`` as a script reaches it: TF2's, and TF1's (``tfv1.add_n``, a ported script's ``tf.add_n``)
PATCHES = [Patch(lambda: tf, "add_n", _add_n), Patch(lambda: tf.math, "add_n", _add_n),
           Patch(lambda: tf.compat.v1, "add_n", _add_n), Patch(lambda: tf.compat.v1.math, "add_n", _add_n)]


def _tower_variables(recorder: GraphRecorder, k: int) -> list:
    return recorder.towers[k].tower_func.trainable_variables


#: TF1 ``minimize`` options about graph scheduling only: accepted and ignored
_TF1_SCHEDULING = ("colocate_gradients_with_ops", "gate_gradients", "aggregation_method")


def minimize(optimizer: Any, loss: Any, var_list: Sequence[Any] | None = None, name: str | None = None,
             tape: tf.GradientTape | None = None, **tf1_options: Any) -> Any:
    """tensorpack's ``opt.minimize(loss, var_list=..., name=...)`` for a Keras optimizer.

    In a custom trainer's ``__init__`` (``loss`` built by a tower under a
    ``TowerContext``, see :mod:`trainstack.towers.tf1.recording`): records the
    optimization and returns a :class:`GraphOp`, a step the trainer runs.
    ``var_list`` defaults to the trainable variables of the loss's tower function.
    ``optimizer`` may be wrapped by ``apply_grad_processors``, or be a TF1 optimizer
    (``tf.compat.v1.train.AdamOptimizer``, ...: its Keras stand-in is trained).

    ``loss`` may also combine the costs of several towers (tensorpack's multi-GPU GAN:
    ``tf.add_n([c[0] for c in DataParallelBuilder.call_for_each_tower(...)]) * (1.0 / n)``,
    a :class:`RecordedValue`). ``colocate_gradients_with_ops``, ``gate_gradients`` and
    ``aggregation_method`` (TF1 graph scheduling) are accepted and ignored.

    Inside a traced function (a step body): applies the gradients of ``loss``
    (taken with ``tape``, which must have recorded it) to ``var_list`` now, and
    returns ``loss``.
    """
    unknown = sorted(set(tf1_options) - set(_TF1_SCHEDULING))
    if unknown:
        raise TypeError(f"minimize() got unexpected keyword argument(s) {unknown}")
    optimizer = adapt_optimizer(optimizer)
    check_optimizer(optimizer, "minimize(optimizer, ...)")
    keras_optimizer, processors = unwrap_optimizer(optimizer)
    if not tf.executing_eagerly() or (tape is not None):
        if tape is None or var_list is None:
            raise TypeError("minimize() inside a traced function needs tape= (a tf.GradientTape that "
                            "recorded the loss) and var_list=")
        variables = list(var_list)
        pairs = [(g, v) for g, v in zip(tape.gradient(loss, variables), variables) if g is not None]
        for proc in processors:
            pairs = proc.process(pairs)
        keras_optimizer.apply_gradients(pairs)
        return loss
    recorder = _current_recorder()
    recorded = None
    if recorder is not None:
        if isinstance(loss, RecordedValue) and loss.recorder is recorder:
            recorded = loss
        elif isinstance(loss, tf.Tensor) and tf.is_symbolic_tensor(loss):
            recorded = _recorded(recorder, loss)
    if recorded is None:
        raise GraphBuildError(
            f"minimize(optimizer, loss={loss!r:.80}): outside a traced function, the loss must be a "
            "tensor built by a tower function under a TowerContext in a TowerTrainer subclass's "
            "__init__ (tensorpack's graph building), or tf.add_n of such tensors; for example:\n"
            + SUPPORTED_FORM)
    assert recorder is not None  # it recorded the loss
    variables = list(var_list) if var_list is not None else _tower_variables(recorder, recorded.towers[0])
    if not variables:
        raise GraphBuildError(f"minimize(): var_list is empty for loss {recorded.name}")
    deps = list(dict.fromkeys(op for scope in recorder.dependency_scopes for op in scope))
    op = GraphOp(recorder, keras_optimizer, processors, recorded, variables,
                 name or f"minimize_{len(recorder.ops)}", deps)
    recorder.ops.append(op)
    return op


@contextlib.contextmanager
def _dependency_scope(recorder: GraphRecorder, ops: list[GraphOp]) -> Iterator[None]:
    recorder.dependency_scopes.append(ops)
    try:
        yield
    finally:
        recorder.dependency_scopes.remove(ops)


def control_dependencies(original: Any, control_inputs: Any) -> Any:
    """``tf.control_dependencies(control_inputs)`` while a trainer's ``__init__`` records its graph:
    every :func:`minimize` made inside the block depends on the block's GraphOps (as TF1 made every
    op created in the block depend on them), and none made after it does."""
    inputs = list(control_inputs) if control_inputs is not None else []
    ops = [c for c in inputs if isinstance(c, GraphOp)]
    recorder = _current_recorder()
    if not ops or recorder is None:
        return original(control_inputs)
    if len(ops) != len(inputs):
        raise GraphBuildError(
            "tf.control_dependencies() in a trainer's __init__ mixes minimize() results with other "
            f"values ({[c for c in inputs if not isinstance(c, GraphOp)]!r:.120}): only minimize() "
            "results can be ordered while the graph is recorded")
    return _dependency_scope(recorder, ops)

