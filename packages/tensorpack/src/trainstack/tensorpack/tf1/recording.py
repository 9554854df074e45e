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
from trainstack.towers import TowerContext, TowerFunc

__all__ = ["GraphBuildError", "GraphRecorder", "constructing", "constructing_trainer", "built_tower_funcs",
           "eager_tower"]

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
        #: the optimizations ``minimize`` recorded (recorded_ops.GraphOp, which imports this module)
        self.ops: list[Any] = []
        #: the GraphOps of the ``tf.control_dependencies`` blocks open now, outermost first
        self.dependency_scopes: list[list[Any]] = []

    def enter_tower(self, ctx: TowerContext) -> _Recording:
        return _Recording(self, ctx)

    def find(self, tensor: tf.Tensor) -> tuple[int, int, int] | None:
        """(tower record, op position, output index) of a tensor a recorded tower built."""
        for k, record in enumerate(self.towers):
            if tensor.graph is record.graph and tensor.op in record.position:
                return k, record.position[tensor.op], tensor.value_index
        return None

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
        held = [v for v in vars(trainer).values() if any(v is op for op in self.ops)]
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
