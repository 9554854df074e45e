"""A custom trainer that builds its graph in ``__init__``, as tensorpack's GAN trainers do.

tensorpack's custom trainers build a TF1 graph in their constructor and keep
the ops to run::

    class GANTrainer(TowerTrainer):
        def __init__(self, input, model):
            super().__init__()
            self.register_callback(input.setup(model.get_input_signature()))
            self.tower_func = TowerFunc(model.build_graph, model.get_input_signature())
            with TowerContext('', is_training=True):
                self.tower_func(*input.get_input_tensors())
            opt = model.get_optimizer()
            with tf.name_scope('optimize'):
                g_min = opt.minimize(model.g_loss, var_list=model.g_vars, name='g_op')
                with tf.control_dependencies([g_min]):
                    d_min = opt.minimize(model.d_loss, var_list=model.d_vars, name='d_op')
            self.train_op = d_min

This runs in TensorFlow 2 as written, with Keras optimizers: they have no
``minimize`` in Keras 3, and while such a trainer's ``__init__`` runs the TF1
room gives them tensorpack's (see :mod:`~trainstack.towers.tf1.switch`), which
is :func:`minimize` (``minimize(opt, loss, var_list=...)``, the same call).
What happens:

- While the ``__init__`` of a :class:`~trainstack.towers.TowerTrainer` subclass with
  ``records_graph_build`` (the default) runs, a ``TowerContext`` entered outside any
  traced function does not run the model eagerly (which would block on a queue's
  dequeue): it builds the
  tower once in a scratch graph, with the input's tensors (the queue's
  dequeue, a feed's placeholder), and records it. The model's variables are
  created then (in a traced function, as the other trainers create them), so
  the model's attributes (``model.g_loss``, ``model.g_vars``) exist after the
  ``with`` block: losses as symbolic tensors, variables as the real ones.
- ``opt.minimize`` (:func:`minimize`) on such a loss records an optimization (the optimizer, the
  loss, the variables) and returns a :class:`GraphOp`. Every ``minimize`` made inside a
  ``tf.control_dependencies([g_min])`` block runs after ``g_min``, as in TF1; none made
  after the block does (:func:`control_dependencies`).
- A ``GraphOp`` is a step: ``self.train_op = d_min`` (the default
  ``run_step`` runs it with the callbacks' hooks), ``self.hooked_run(self.d_min)``
  or tensorpack's ``self.hooked_sess.run(self.d_min)``. When ``__init__``
  returns, each ``GraphOp`` the trainer holds is traced (a
  :class:`~trainstack.towers.TracedStep`): the recorded towers are built again
  on the input's next batch, then the optimizations it depends on and its own
  are applied, in order. The graph is frozen from there on, as with the other
  trainers. Its output is its loss; callbacks fetch tensors by name from the
  first training tower.
- The optimizers are built for all the variables they minimize over (one Keras
  optimizer may minimize several losses, as tensorpack's GAN does with one
  ``model.get_optimizer()``), and ``trainer.checkpoint_objects`` holds them, so
  ``ModelSaver`` saves their state.

The trainer must know its input: ``self.register_callback(input.setup(...))``
(or ``self.setup_input(signature, input)``) before the tower is built.

Several towers (tensorpack's multi-GPU GAN trainer)::

    cost_list = DataParallelBuilder.call_for_each_tower(
        list(range(num_gpu)), lambda: self.tower_func(*input.get_input_tensors()), devices)
    with tf.name_scope('optimize'):
        d_loss = tf.add_n([x[0] for x in cost_list]) * (1.0 / num_gpu)
        g_loss = tf.add_n([x[1] for x in cost_list]) * (1.0 / num_gpu)
        g_min = opt.minimize(g_loss, var_list=model.g_vars, colocate_gradients_with_ops=True, name='g_op')
        with tf.control_dependencies([g_min]):
            d_min = opt.minimize(d_loss, var_list=model.d_vars, ..., name='d_op')

Each tower is recorded with the device of the ``tf.device`` around its ``TowerContext``, and
built there in the step, on its own batch of the input (a feedfree input set up for one
tower serves them all, as tensorpack's did). ``tf.add_n`` of the towers' tensors and ``+ - * /``
with numbers give a :class:`RecordedValue`, made again from the towers in each step (under
the gradient tape), which ``minimize`` takes as its loss. Other operations on the towers'
tensors outside a tower cannot be recorded; write such a trainer with
:class:`~trainstack.towers.TracedStep` (see ``examples/gan_toy.py``).
"""
from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import tensorflow as tf
from tensorflow.python.eager import context as _eager_context
from tensorflow.python.framework import func_graph as _func_graph

from trainstack.callbacks import SummaryCollection, summary_collection_scope
from trainstack.callbacks.variables import variable_name
from trainstack.towers import TowerContext, TowerFunc
from trainstack.towers.tower.gradproc import check_optimizer, unwrap_optimizer
from trainstack.towers.tower.step import TracedStep

from .switch import Patch
from .train_optimizers import adapt_optimizer

__all__ = ["minimize", "GraphOp", "GraphBuildError", "RecordedValue", "PATCHES"]

logger = logging.getLogger("trainstack.tensorpack")

_local = threading.local()

SUPPORTED_FORM = """\
    def __init__(self, input, model):
        super().__init__()
        self.register_callback(input.setup(model.get_input_signature()))
        self.tower_func = TowerFunc(model.build_graph, model.get_input_signature())
        with TowerContext('', is_training=True):
            self.tower_func(*input.get_input_tensors())
        opt = model.get_optimizer()
        g_min = opt.minimize(model.g_loss, var_list=model.g_vars)
        with tf.control_dependencies([g_min]):
            d_min = opt.minimize(model.d_loss, var_list=model.d_vars)
        self.train_op = d_min"""


class GraphBuildError(RuntimeError):
    """A custom trainer's ``__init__`` built a graph in a way that cannot be recorded."""


# -- construction of a trainer ---------------------------------------------------------------------
class _Construction:
    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self.depth = 0
        self.recorder: GraphRecorder | None = None


def _stack() -> list[_Construction]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


@contextlib.contextmanager
def constructing(trainer: Any) -> Iterator[None]:
    """Wrap a trainer's ``__init__`` (nested ``super().__init__`` calls count once); when the
    outermost one returns, trace what it recorded."""
    stack = _stack()
    if stack and stack[-1].trainer is trainer:
        stack[-1].depth += 1
        try:
            yield
        finally:
            stack[-1].depth -= 1
        return
    construction = _Construction(trainer)
    stack.append(construction)
    try:
        yield
    finally:
        stack.pop()
    if construction.recorder is not None:
        construction.recorder.finish()


def _current_recorder(create: bool = False) -> GraphRecorder | None:
    stack = _stack()
    if not stack:
        return None
    construction = stack[-1]
    if construction.recorder is None and create:
        construction.recorder = GraphRecorder(construction.trainer)
    return construction.recorder


def eager_tower(ctx: TowerContext) -> Any:
    """For a TowerContext entered eagerly while a trainer is constructed: the entered recording
    of its tower in a scratch graph; None outside any construction (the tower runs eagerly)."""
    recorder = _current_recorder(create=True)
    return None if recorder is None else recorder.enter_tower(ctx)


def _input_of(trainer: Any) -> Any:
    """The trainer's InputSource, None before it has one."""
    try:
        return trainer.input
    except AttributeError:
        return None


def _tower_func_of(trainer: Any) -> TowerFunc | None:
    try:
        return trainer.tower_func
    except AttributeError:
        return None


def constructing_trainer() -> Any:
    """The trainer whose construction this thread is in (its ``__init__``, or the ``optimizer()``
    its ``setup_graph`` calls), or None."""
    stack = _stack()
    return stack[-1].trainer if stack else None


def built_tower_funcs() -> list[TowerFunc]:
    """The tower functions that built a tower so far in the trainer construction this thread is in
    (see :func:`constructing_trainer`): those of its recorded towers, and the trainer's
    ``tower_func`` once it built one (e.g. in the trainer's own ``tf.function``); [] outside a
    construction or before any tower."""
    stack = _stack()
    if not stack:
        return []
    construction = stack[-1]
    funcs = [] if construction.recorder is None else [r.tower_func for r in construction.recorder.towers]
    own = _tower_func_of(construction.trainer)
    if isinstance(own, TowerFunc) and own.first_tower is not None:
        funcs.append(own)
    return list({id(f): f for f in funcs}.values())


# -- recording -----------------------------------------------------------------------------------------
class _TowerRecord:
    def __init__(self, tower_func: TowerFunc, ctx: TowerContext, graph: Any, ops: list, device: str) -> None:
        self.tower_func = tower_func
        self.name, self.is_training, self.index = ctx.name, ctx.is_training, ctx.index
        #: the device the tower was built under (``tf.device`` around its TowerContext), "" for none
        self.device = device
        self.graph = graph
        self.ops = ops
        self.position = {op: i for i, op in enumerate(ops)}


class _Recording:
    """The scratch graph a TowerContext entered eagerly builds its tower in."""

    def __init__(self, recorder: GraphRecorder, ctx: TowerContext) -> None:
        self.recorder = recorder
        # the device of the eager `with tf.device(...)` around the TowerContext (tensorpack's
        # DataParallelBuilder.call_for_each_tower places each tower so): the step builds it there
        self.device = _eager_context.context().device_name or ""
        self.graph = _func_graph.FuncGraph(f"{type(recorder.trainer).__name__}_graph_build")
        self._stack = contextlib.ExitStack()
        self._stack.enter_context(self.graph.as_default())
        source = _input_of(recorder.trainer)
        if source is not None:
            feeds = {name: tf.compat.v1.placeholder(spec.dtype, spec.shape, name=name.replace("/", "_"))
                     for name, spec in source.feed_signature().items()}
            self._stack.enter_context(source.tracing(feeds))
        self._stack.enter_context(summary_collection_scope(None))

    def __exit__(self, *exc: Any) -> None:
        self._stack.__exit__(*exc)

    def call_tower(self, tower_func: TowerFunc, ctx: TowerContext, inputs: Sequence[Any]) -> Any:
        if tower_func.first_tower is None:
            # create the variables in a traced function (tf.function lifts their creation out
            # of the graph, whatever their initial values), then build the tower here
            specs = [tf.TensorSpec(tf.convert_to_tensor(t).shape, tf.convert_to_tensor(t).dtype)
                     for t in inputs]
            with tf.init_scope():
                tf.function(lambda *xs: tower_func.build(ctx, xs),
                            autograph=False).get_concrete_function(*specs)
        # the first training tower records its summaries (as the trainer's steps will: the
        # same ops), into a collection of its own
        main = ctx.is_training and not any(r.is_training for r in self.recorder.towers)
        collection = SummaryCollection("graph_build") if main else None
        before = len(self.graph.get_operations())
        with summary_collection_scope(collection):
            outputs = tower_func.build(ctx, inputs)
        ops = [op for op in self.graph.get_operations()[before:] if op.type != "Placeholder"]
        self.recorder.towers.append(_TowerRecord(tower_func, ctx, self.graph, ops, self.device))
        return outputs


class GraphRecorder:
    """What a custom trainer's ``__init__`` built: its towers and its :func:`minimize` calls."""

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self.towers: list[_TowerRecord] = []
        self.ops: list[GraphOp] = []
        #: the GraphOps of the ``tf.control_dependencies`` blocks open now, outermost first
        self.dependency_scopes: list[list[GraphOp]] = []

    def enter_tower(self, ctx: TowerContext) -> _Recording:
        return _Recording(self, ctx)

    def find(self, tensor: tf.Tensor) -> tuple[int, int, int] | None:
        """(tower record, op position, output index) of a tensor a recorded tower built."""
        for k, record in enumerate(self.towers):
            if tensor.graph is record.graph and tensor.op in record.position:
                return k, record.position[tensor.op], tensor.value_index
        return None

    def recorded(self, tensor: tf.Tensor) -> RecordedValue | None:
        """A tensor a recorded tower built, as a :class:`RecordedValue`; None for any other."""
        located = self.find(tensor)
        if located is None:
            return None
        k, position, index = located
        return RecordedValue(self, lambda built: built[k][position].outputs[index], tensor.name, (k,))

    def finish(self) -> None:
        """End of ``__init__``: check, build the optimizers, trace the steps the trainer holds."""
        if not self.towers:
            return
        trainer = self.trainer
        if _input_of(trainer) is None:
            raise GraphBuildError(
                f"{type(trainer).__name__}.__init__ built a tower without telling the trainer its input. "
                "Register the input's callbacks before building the tower, e.g.\n" + SUPPORTED_FORM)
        if _tower_func_of(trainer) is None:
            trainer.tower_func = self.towers[0].tower_func
        self._serve_towers(trainer.input)
        self._build_optimizers()
        held = [v for v in vars(trainer).values() if isinstance(v, GraphOp)]
        for op in held:
            op.step  # noqa: B018 - trace now: the graph is frozen after construction
        logger.info("%s: traced %d step(s) from the graph built in __init__: %s", type(trainer).__name__,
                    len(held), ", ".join(op.name for op in held))

    def _serve_towers(self, source: Any) -> None:
        """tensorpack's inputs served as many towers as read them, and its multi-GPU GAN trainer
        sets its input up with ``input.setup(signature)``: a feedfree input (a queue, a dataset,
        ``StagingInput`` of one) is set to serve the training towers recorded. An input fed
        from Python makes one feed per tower when set up: it must be told."""
        n = sum(r.is_training for r in self.towers)
        if n <= source.num_towers:
            return
        if source.feed_signature():
            raise GraphBuildError(
                f"{type(self.trainer).__name__}.__init__ built {n} training towers reading {source.name}, "
                f"which was set up for {source.num_towers}: an input fed from Python makes its feeds when "
                f"set up; call input.setup(model.get_input_signature(), num_towers={n}), or use QueueInput")
        while source is not None and hasattr(source, "num_towers"):
            source.num_towers = n
            source = getattr(source, "input", None)  # StagingInput's wrapped source

    def _build_optimizers(self) -> None:
        by_optimizer: dict[int, tuple[Any, dict[int, Any]]] = {}
        for op in self.ops:
            _, variables = by_optimizer.setdefault(id(op.optimizer), (op.optimizer, {}))
            for v in op.variables:
                variables.setdefault(id(v), v)
        for optimizer, variables in by_optimizer.values():
            if not optimizer.built:
                optimizer.build(list(variables.values()))
            self.trainer.register_optimizer(optimizer)

    def make_step(self, target: GraphOp) -> TracedStep:
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
        trainer = self.trainer
        source = trainer.input
        towers = self.towers
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
            self._step = self.recorder.make_step(self)
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
        recorded = recorder.recorded(x)
        if recorded is None:
            raise GraphBuildError(f"{what}: {x!r:.80} is a graph tensor no recorded tower built; in a "
                                  "trainer's __init__ only the towers' tensors can be combined")
        return recorded
    try:
        constant = tf.constant(x) if not isinstance(x, tf.Tensor) else x
    except (TypeError, ValueError) as e:
        raise GraphBuildError(f"{what}: cannot combine {x!r:.80} with the towers' tensors") from e
    return RecordedValue(recorder, lambda built: constant, repr(x), ())


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
            recorded = recorder.recorded(loss)
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

