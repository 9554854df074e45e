# Over 400 lines on purpose: the context, handles and TowerFunc share one tower's state (owner, variables).
"""Towers: one replicate of the model, built by a tower function under a TowerContext.

A *tower function* takes the input tensors and builds the model on them
(``ModelDesc.build_graph`` is one). The trainer calls it under a
:class:`TowerContext` that says which tower is being built and whether it is
for training; model code reads it with :func:`get_current_tower_context`::

    def build_graph(self, x, label):
        ctx = get_current_tower_context()
        logits = self.fc(self.dropout(x, training=ctx.is_training))
        ...

:class:`TowerFunc` wraps a tower function. Each call builds one tower and
records a :class:`TowerHandle` in ``tower_func.towers``, through which the
tower's inputs, outputs and named tensors (``tf.identity(x, name="accuracy")``)
are read later, e.g. by callbacks fetching values by name.

The tower function is called several times
------------------------------------------
Once per training tower (several devices), once per inference tower
(predictors), and again every time a step function is traced. Build the model
from objects created once (Keras layers set in ``ModelDesc.__init__``), and
keep global state out of it::

    class Model(ModelDesc):
        def __init__(self):
            self.fc = keras.layers.Dense(10)      # created once: its variables are reused

        def build_graph(self, x, label):
            logits = self.fc(x)                   # good: the same layer on every call
            # bad: keras.layers.Dense(10)(x) makes new variables on each call;
            # bad: self.costs.append(cost) grows a Python list on each call.
            ...

The reuse rule (TF1's ``tf.get_variable`` reuse, in TF2 form): variables may
be created only while the *first* tower a TowerFunc builds is built for the
first time (the first training tower when training; the inference tower when
it is the only one, e.g. in an offline predictor). A tower function that
creates a variable anywhere else (another tower, or a later call of the first
one) gets a :class:`VariableReuseError` naming the variable and the tower.
Variables are named without the tower's name scope (``dense/kernel``, not
``tower0/dense/kernel``), as tensorpack's were.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import re
import threading
import types
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager as ContextManager
from typing import Any

import tensorflow as tf

from trainstack.inputs import InputSignatureError, normalize_signature
from trainstack.loop.checks import check_int

__all__ = ["TowerContext", "get_current_tower_context", "TowerFunc", "TowerHandle", "TowerHandles",
           "VariableReuseError", "variable_name"]

_local = threading.local()
logger = logging.getLogger("trainstack.towers")
_OUTPUT_INDEX = re.compile(r"^(.*):([0-9]+)$")


class VariableReuseError(ValueError):
    """A tower function created a variable where only existing variables may be used."""

    # Exception's own __init__ lets autograph re-raise it with its type when it crosses a trace
    __init__ = Exception.__init__


# -- the context ---------------------------------------------------------------------------------
class TowerContext:
    """The tower being built: its ``name`` (also its name scope), ``is_training`` and ``index``.

    ``index`` counts the towers of one kind (training tower ``k`` is named
    ``tower<k>`` by the trainers). ``is_main_training_tower`` is true for the
    first training tower, the one whose summaries are kept and whose tensors
    callbacks fetch. Contexts do not nest.

    ``cross_worker_mean`` is how a layer reaches the other worker processes of data-parallel
    training: ``cross_worker_mean(tensors)`` returns each tensor's mean over the workers (same
    shapes, same order; every worker must call it with the same tensors in the same order).
    The trainer that has workers sets it on the training towers it builds (``HorovodTrainer``:
    a Horovod all-reduce; ``BatchNorm(sync_statistics='horovod')`` uses it); None elsewhere.
    It lives as long as the context: nothing global outlives the build.
    """

    def __init__(self, name: str, is_training: bool, index: int = 0, *,
                 cross_worker_mean: Callable[[Sequence[Any]], list[Any]] | None = None) -> None:
        if not isinstance(name, str):
            raise TypeError(f"TowerContext name must be a str, got {name!r}")
        index = check_int("TowerContext", "index", index, minimum=0)
        self.name = name
        self.is_training = bool(is_training)
        self.index = index
        #: the mean of tensors over the worker processes, or None (see the class docstring)
        self.cross_worker_mean = cross_worker_mean
        #: the name scope the tower's ops live in (set on entry; "" when the name is empty)
        self.ns_name = ""
        self._scope: Any = None
        #: what :meth:`_enter_eagerly` returned (exited with the context), or None
        self._eager: Any = None

    @property
    def is_main_training_tower(self) -> bool:
        return self.is_training and self.index == 0

    def __enter__(self) -> TowerContext:
        current = get_current_tower_context()
        if current is not None:
            raise RuntimeError(f"cannot enter TowerContext({self.name!r}) inside TowerContext("
                               f"{current.name!r}): tower contexts do not nest")
        if tf.executing_eagerly():
            self._eager = self._enter_eagerly()
        if self.name:
            self._scope = tf.name_scope(self.name)
            self._scope.__enter__()
            self.ns_name = tf.get_current_name_scope()
        _local.ctx = self
        return self

    def __exit__(self, *exc: Any) -> None:
        _local.ctx = None
        if self._scope is not None:
            scope, self._scope = self._scope, None
            scope.__exit__(*exc)
        if self._eager is not None:
            entered, self._eager = self._eager, None
            entered.__exit__(*exc)

    def _build_tower(self, tower_func: TowerFunc, inputs: Sequence[Any]) -> Any:
        """Hook: build the tower ``tower_func(*inputs)`` under this context (what calling a
        TowerFunc does). The default builds it now (:meth:`TowerFunc.build`); a subclass whose
        :meth:`_enter_eagerly` records towers instead hands it to its recorder."""
        return tower_func.build(self, inputs)

    def _enter_eagerly(self) -> ContextManager[Any] | None:
        """Hook: called when the context is entered outside any traced function; returns an
        entered context manager, exited with this context, or None. The default returns None:
        the tower runs eagerly (TensorFlow 2). A subclass may build the tower elsewhere instead
        (``trainstack.tensorpack``'s TowerContext records it while a custom trainer is
        constructed, as tensorpack's trainers built their graph in ``__init__``)."""
        return None

    def __repr__(self) -> str:
        return (f"TowerContext({self.name!r}, is_training={self.is_training}, index={self.index})")


def get_current_tower_context() -> TowerContext | None:
    """The TowerContext being built in this thread, or None outside any tower."""
    return getattr(_local, "ctx", None)


# -- handles -------------------------------------------------------------------------------------
class TowerHandle:
    """What one build of a tower left behind: its context, inputs, outputs and named tensors."""

    def __init__(self, ctx: TowerContext, inputs: Sequence[Any], input_signature: Sequence[tf.TensorSpec]):
        self.ctx = ctx
        self.inputs = list(inputs)
        self.outputs: Any = None
        self._input_names = [s.name for s in input_signature]
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


# -- the tower function ------------------------------------------------------------------------
def variable_name(v: Any) -> str:
    """A variable's name without ``:0`` (Keras variables: their path)."""
    name = getattr(v, "path", None) if not isinstance(v, tf.Variable) else None
    name = name or getattr(v, "name", None) or repr(v)
    return name[:-2] if name.endswith(":0") else name


class TowerFunc:
    """A tower function with its input signature; each call builds one tower.

    ``tower_func(*input_tensors)`` must run under a :class:`TowerContext`. It
    calls ``fn(*input_tensors)`` under the reuse rule of the module docstring,
    records a :class:`TowerHandle` in :attr:`towers` and returns ``fn``'s output.

    ``owner`` declares what the model's checkpoint holds (the trainers' ``model`` key),
    so that its keys do not depend on names in the tower function:

    - an object with a ``checkpoint_objects()`` method returning a dict ``key -> Keras
      layer, tf.Module or variable`` (or a list/dict of them): a :class:`ModelDesc` is
      one (by default its attributes holding layers, by attribute name);
    - such a dict itself, e.g. ``TowerFunc(get_cost, signature, owner={"body": body,
      "head": head})`` for a plain function over layers it reads from its closure;
    - a Keras layer or ``tf.Module`` (its variables under ``model/root/...``).

    Without it the owner is the object ``fn`` is a method of (``model.build_graph``: the
    ModelDesc), else, as a fallback, what the function reads (see :attr:`model_owner`),
    which logs once the keys it chose and how to declare them instead.
    """

    def __init__(self, fn: Callable[..., Any], input_signature: Sequence[tf.TensorSpec],
                 owner: Any = None) -> None:
        if isinstance(fn, TowerFunc):
            owner = fn._declared_owner if owner is None else owner
            fn = fn.fn
        if not callable(fn):
            raise TypeError(f"a tower function must be callable, got {fn!r}")
        self.fn: Callable[..., Any] = fn
        #: the owner given as ``owner=`` (a dict wrapped in a _DeclaredOwner), or None
        self._declared_owner: Any = _declare_owner(owner, fn)
        self._signature = normalize_signature(input_signature)
        self.towers = TowerHandles()
        self._variables: list[tf.Variable] = []
        self._first_tower: str | None = None
        self._creation_open = True
        self._building_in_graph = False
        self._checkpoint_module: tf.Module | None = None

    @property
    def input_signature(self) -> tuple[tf.TensorSpec, ...]:
        """The named TensorSpecs of the inputs, in order."""
        return self._signature

    @property
    def owner(self) -> Any:
        """The declared owner (``owner=``), else the object the tower function is a method of
        (the ModelDesc), or None."""
        if self._declared_owner is not None:
            return self._declared_owner
        return getattr(self.fn, "__self__", None)

    @property
    def model_owner(self) -> Any:
        """What the model's variables are named after in checkpoints: the declared ``owner=``
        (a dict given there: an object whose attributes are its items); else the object the
        tower function is a method of; else, the fallback, for a plain function (or a
        ``functools.partial``): the one ModelDesc it reads (from its closure, its arguments or
        the module globals it names), else an object whose attributes are the Keras layers,
        ``tf.Module``s and variables it reads that way, by their names in the function; None
        when it reads none."""
        return self._resolve_owner()[0]

    def _resolve_owner(self) -> tuple[Any, str]:
        """(model owner, how it was found): "declared", "method", "found model" (a ModelDesc
        the function reads), "names" (what it reads, by its names for them) or "none"."""
        if self._declared_owner is not None:
            return self._declared_owner, "declared"
        bound = getattr(self.fn, "__self__", None)
        found = _find_model_owner(self.fn)
        if found is None:
            return None, "none"
        if bound is not None and found is bound:
            return found, "method"
        return found, "found model" if _is_model_desc(found) else "names"

    @property
    def variables(self) -> list[tf.Variable]:
        """The variables the tower function created (in the first tower), in creation order."""
        return list(self._variables)

    @property
    def trainable_variables(self) -> list[tf.Variable]:
        """The trainable ones among :attr:`variables` (Keras layers frozen with
        ``layer.trainable = False`` excluded)."""
        frozen = _frozen_ids(self.model_owner)
        return [v for v in self._variables if v.trainable and id(v) not in frozen]

    def model_variables(self) -> list[Any]:
        """Every variable of the model, trainable or not, as tensorpack's graph-side helpers see
        them: those of the layers, modules and variables its owner holds (built before or in the
        tower), then any other the tower function created so far (during the first build: the
        layers called before this point)."""
        owner = self.model_owner
        reached: dict[int, Any] = {}
        if owner is not None:
            parts = ([owner] if isinstance(owner, (tf.keras.layers.Layer, tf.Module))
                     else list(_model_parts(owner).values()))
            _walk_variables(parts, reached)
        for v in self._variables:
            reached.setdefault(id(v), v)
        return list(reached.values())

    def model_trainable_variables(self) -> list[Any]:
        """The trainable ones among :meth:`model_variables`; frozen layers excluded."""
        frozen = _frozen_ids(self.model_owner)
        return [v for v in self.model_variables() if v.trainable and id(v) not in frozen]

    def __call__(self, *inputs: Any) -> Any:
        ctx = get_current_tower_context()
        if ctx is None:
            raise RuntimeError(f"tower function {_fn_name(self.fn)} must be called under a TowerContext, "
                               "e.g. `with TowerContext('tower0', is_training=True): tower_func(*inputs)`")
        if len(inputs) != len(self._signature):
            raise InputSignatureError(
                f"tower function {_fn_name(self.fn)} takes {len(self._signature)} inputs "
                f"{[s.name for s in self._signature]}, got {len(inputs)}")
        return ctx._build_tower(self, inputs)

    @property
    def first_tower(self) -> str | None:
        """The name of the first tower built (the one that creates the variables), or None
        before any build."""
        return self._first_tower

    def build(self, ctx: TowerContext, inputs: Sequence[Any]) -> Any:
        """Build one tower under ``ctx`` now: what calling the tower function does, without
        what :meth:`TowerContext._build_tower` may do instead (a subclass's recorder calls it)."""
        if self._first_tower is None:
            self._first_tower = ctx.name
        handle = TowerHandle(ctx, inputs, self._signature)
        self._building_in_graph = not tf.executing_eagerly()
        with tf.variable_creator_scope(self._creator), self._tracing(ctx):
            outputs = _autograph(self.fn)(*inputs) if self._building_in_graph else self.fn(*inputs)
        handle.outputs = outputs
        self.towers._add(handle)
        if ctx.name == self._first_tower:
            self._creation_open = False
        return outputs

    def _tracing(self, ctx: TowerContext) -> ContextManager[Any]:
        """Hook: entered around each build (trace) of a tower by this function, under ``ctx``.
        The default enters nothing: the tower function runs as TensorFlow 2 code. A subclass
        gives the function's TensorFlow calls another meaning for this thread while it builds
        (``trainstack.tensorpack``'s TowerFunc: tensorpack's TF1 calls, restored on exit); a
        :class:`ModelDescBase` says which TowerFunc class builds its towers
        (:attr:`ModelDescBase.tower_func_class`)."""
        return contextlib.nullcontext()

    def _creator(self, next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        if self._building_in_graph and tf.executing_eagerly():
            # made under tf.init_scope while tracing: state its creator keeps once (e.g. the
            # moving averages of add_moving_summary), not part of the tower
            return next_creator(**kwargs)
        ctx = get_current_tower_context()
        scope = tf.get_current_name_scope()
        tower_scope = ctx.ns_name if ctx is not None else ""
        if tower_scope and (scope == tower_scope or scope.startswith(tower_scope + "/")):
            outer = tower_scope.rsplit("/", 1)[0] + "/" if "/" in tower_scope else ""
            scope = outer + scope[len(tower_scope) + 1:]
        scope = scope.strip("/")
        name = f"{scope}/{kwargs.get('name') or 'Variable'}".lstrip("/")
        tower = ctx.name if ctx is not None else "<no tower>"
        if ctx is None or ctx.name != self._first_tower:
            raise VariableReuseError(
                f"tower {tower!r} tried to create variable {name!r}: only the first tower "
                f"({self._first_tower!r}) of tower function {_fn_name(self.fn)} creates variables, "
                "the other towers reuse them. Create layers and variables once (e.g. in "
                "ModelDesc.__init__) and use them in the tower function")
        if not self._creation_open:
            raise VariableReuseError(
                f"tower {tower!r} tried to create variable {name!r} on a later call of tower function "
                f"{_fn_name(self.fn)}: variables are created on its first call only, and it is called "
                "again on every trace (and once per tower). Create layers and variables once (e.g. "
                "in ModelDesc.__init__) and use them in the tower function")
        # create it outside the tower's name scope: "dense/kernel", not "tower0/dense/kernel"
        with tf.name_scope(scope + "/" if scope else ""):
            var = next_creator(**kwargs)
        self._variables.append(var)
        return var

    # -- checkpointing -------------------------------------------------------------------------
    @property
    def checkpoint_module(self) -> tf.Module:
        """A ``tf.Module`` naming the model's variables for ``tf.train.Checkpoint``.

        Its attributes are what the owner declares (``checkpoint_objects()``: a
        ModelDesc's default is its attributes holding Keras layers, ``tf.Module``s and
        variables; see the ``owner`` argument), so checkpoint keys follow the declared
        keys (``fc/kernel``), not Keras's per-process layer names (``dense_1``): a
        checkpoint restores into another instance of the same model, in this
        process or another. The owner is found the same way however the tower
        function is given (see :attr:`model_owner`): ``model.build_graph``, a plain
        ``def get_cost(*inputs)`` calling ``model.build_graph`` or a
        ``functools.partial`` of one write the same keys as ``PredictConfig(model=
        Model())`` reads; a plain function whose owner was found by reflection logs
        once the keys it chose. Variables the tower function created that no declared
        object reaches are kept under ``untracked/<variable path>``.
        Built once, after the first tower.
        """
        if self._checkpoint_module is None:
            if self._creation_open:
                raise RuntimeError(f"tower function {_fn_name(self.fn)} has not built a tower yet; "
                                   "its variables (and checkpoint) exist after the first one")
            owner, how = self._resolve_owner()
            self._checkpoint_module = module = _ModelCheckpoint(owner, self._variables)
            if how in ("found model", "names"):
                _log_guessed_owner(self, owner, how, module)
        return self._checkpoint_module

    def __repr__(self) -> str:
        return f"TowerFunc({_fn_name(self.fn)}, inputs={[s.name for s in self._signature]})"


def _fn_name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def _is_model_desc(x: Any) -> bool:
    """Whether ``x`` is a ModelDesc, known by its interface (model_desc.py builds on this
    module, so this one does not import it)."""
    return not isinstance(x, type) and all(
        callable(getattr(x, name, None)) for name in ("get_input_signature", "build_graph", "inputs"))


def _find_model_owner(fn: Any) -> Any:
    """See :attr:`TowerFunc.model_owner`."""
    bound = getattr(fn, "__self__", None)
    if bound is not None and not isinstance(bound, types.ModuleType):
        return bound
    named: dict[str, Any] = {}
    if isinstance(fn, functools.partial):
        inner = _find_model_owner(fn.func)
        if _is_model_desc(inner):
            return inner
        if isinstance(inner, types.SimpleNamespace):
            named.update(vars(inner))
        named.update({f"arg{i}": a for i, a in enumerate(fn.args)})
        named.update(fn.keywords)
    else:
        code = getattr(fn, "__code__", None)
        if code is None:
            return None
        for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
            try:
                named[name] = cell.cell_contents
            except ValueError:  # an empty cell
                continue
        module_globals = getattr(fn, "__globals__", {})
        for name in code.co_names:
            if name in module_globals and name not in named:
                named[name] = module_globals[name]
    models = {id(v): v for v in named.values() if _is_model_desc(v)}
    if len(models) == 1:
        return next(iter(models.values()))
    if models:
        return None  # several models: no single naming; variables keep their paths
    parts = {name: value for name, value in named.items()
             if not name.startswith("__") and _keep(value) is not None}
    return types.SimpleNamespace(**parts) if parts else None


# -- the model's owner: what its checkpoint holds --------------------------------------------------
class _DeclaredOwner:
    """A dict given as ``TowerFunc(owner={...})``: its items are its attributes (for the code that
    reads an owner's attributes) and what ``checkpoint_objects()`` declares."""

    def __init__(self, objects: dict[str, Any]) -> None:
        self.__dict__.update(objects)

    def checkpoint_objects(self) -> dict[str, Any]:
        return dict(vars(self))

    def __repr__(self) -> str:
        return f"owner={{{', '.join(repr(k) for k in vars(self))}}}"


def _declares_checkpoint(owner: Any) -> bool:
    """Whether ``owner`` follows the owner protocol: a ``checkpoint_objects()`` method (a
    trainer's ``checkpoint_objects`` property, holding this model, is not one)."""
    if owner is None or isinstance(owner, type):
        return False
    attr = inspect.getattr_static(type(owner), "checkpoint_objects", None)
    return attr is not None and callable(attr) and not isinstance(attr, property)


def _declare_owner(owner: Any, fn: Any) -> Any:
    """The owner given to ``TowerFunc(fn, ..., owner=owner)``, checked (a dict: wrapped)."""
    if owner is None:
        return None
    if isinstance(owner, Mapping):
        owner = _DeclaredOwner(_checked_parts(dict(owner), f"TowerFunc({_fn_name(fn)}, owner=...)"))
    elif not (_declares_checkpoint(owner) or isinstance(owner, (tf.keras.layers.Layer, tf.Module))):
        raise TypeError(
            f"TowerFunc({_fn_name(fn)}, owner={owner!r:.80}): the owner declares what the model's "
            "checkpoint holds: give an object with a checkpoint_objects() method (a ModelDesc is one), "
            "a dict {key: Keras layer, tf.Module or variable}, or a Keras layer / tf.Module")
    return owner


def _checked_parts(parts: Any, who: str) -> dict[str, Any]:
    if not isinstance(parts, Mapping):
        raise TypeError(f"{who}: checkpoint_objects() must return a dict {{key: Keras layer, tf.Module or "
                        f"variable}}, got {type(parts).__name__}")
    checked = {}
    for key, value in parts.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"{who}: checkpoint keys must be non-empty strings, got {key!r}")
        kept = _keep(value)
        if kept is None:
            raise TypeError(f"{who}: checkpoint_objects()[{key!r}] is {type(value).__name__}; expected a "
                            "Keras layer, a tf.Module, a variable, or a list/dict of them")
        checked[key] = kept
    return checked


def _owner_parts(owner: Any) -> dict[str, Any]:
    """What ``owner`` checkpoints, by key: its ``checkpoint_objects()`` (checked) when it declares
    them; a Keras layer or tf.Module under ``root``; else its attributes holding layers,
    modules or variables (or containers of them)."""
    if owner is None:
        return {}
    if _declares_checkpoint(owner):
        return _checked_parts(owner.checkpoint_objects(), f"{type(owner).__name__}.checkpoint_objects()")
    if isinstance(owner, (tf.keras.layers.Layer, tf.Module)):
        return {"root": owner}
    return _model_parts(owner)


def _log_guessed_owner(tower_func: TowerFunc, owner: Any, how: str, module: tf.Module) -> None:
    """The fallback's one log line: the keys it chose and how to declare them."""
    name = _fn_name(tower_func.fn)
    keys = [f"model/{k}" for k in _owner_parts(owner)]
    untracked = getattr(module, "untracked", None)
    if untracked:
        keys.append(f"model/untracked/... ({len(untracked)} variables, by their names)")
    if how == "found model":
        logger.info("TowerFunc(%s) declares no owner; its checkpoint keys come from the ModelDesc it "
                    "reads, %s: %s. Declare it: TowerFunc(%s, input_signature, owner=model), or pass "
                    "model.build_graph.", name, type(owner).__name__, ", ".join(keys) or "none", name)
        return
    names = list(_owner_parts(owner))
    logger.warning(
        "TowerFunc(%s) declares no owner, so its checkpoint keys were taken from the names the function "
        "uses for what it reads: %s. Renaming one of them changes the checkpoint, and resuming from an "
        "older one then fails. Declare them: TowerFunc(%s, input_signature, owner={%s}) (or an owner "
        "with a checkpoint_objects() method, e.g. a ModelDesc).", name, ", ".join(keys), name,
        ", ".join(f"{k!r}: {k}" for k in names))


def _is_trackable_model_part(x: Any) -> bool:
    return isinstance(x, (tf.keras.layers.Layer, tf.Module, tf.Variable, tf.keras.Variable))


def _model_parts(obj: Any) -> dict[str, Any]:
    """The attributes of ``obj`` holding layers, modules or variables (or containers of them)."""
    parts = {}
    for key, value in vars(obj).items():
        kept = _keep(value)
        if kept is not None:
            parts[key] = kept
    return parts


def _keep(value: Any) -> Any:
    if _is_trackable_model_part(value):
        return value
    if isinstance(value, (list, tuple)):
        kept = [_keep(v) for v in value]
        return kept if kept and all(k is not None for k in kept) else None
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        kept_items = {k: _keep(v) for k, v in value.items()}
        return kept_items if kept_items and all(v is not None for v in kept_items.values()) else None
    return None


def _walk_variables(value: Any, out: dict[int, tf.Variable]) -> None:
    if isinstance(value, tf.Variable):
        out.setdefault(id(value), value)
    elif isinstance(value, tf.keras.Variable):
        out.setdefault(id(value.value), value.value)
    elif isinstance(value, tf.keras.layers.Layer):
        for v in value.variables:
            _walk_variables(v, out)
    elif isinstance(value, tf.Module):
        for v in value.variables:
            out.setdefault(id(v), v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _walk_variables(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _walk_variables(v, out)


def _frozen_ids(owner: Any) -> set[int]:
    """ids of the tf.Variables that the owner's Keras layers do not train."""
    plain_layer = isinstance(owner, (tf.keras.layers.Layer, tf.Module)) and not _declares_checkpoint(owner)
    if owner is None or plain_layer:
        layers = [owner] if isinstance(owner, tf.keras.layers.Layer) else []
    else:
        layers = []
        # what the owner declares, and its attributes (a frozen layer it does not checkpoint)
        values = list(_owner_parts(owner).values())
        if _declares_checkpoint(owner) and not isinstance(owner, (tf.keras.layers.Layer, tf.Module)):
            values += list(_model_parts(owner).values()) if hasattr(owner, "__dict__") else []
        for value in values:
            stack = [value]
            while stack:
                v = stack.pop()
                if isinstance(v, tf.keras.layers.Layer):
                    layers.append(v)
                elif isinstance(v, (list, tuple)):
                    stack.extend(v)
                elif isinstance(v, dict):
                    stack.extend(v.values())
    frozen: set[int] = set()
    for layer in layers:
        for w in layer.non_trainable_weights:
            frozen.add(id(getattr(w, "value", w)))
    return frozen


class _ModelCheckpoint(tf.Module):
    """See :attr:`TowerFunc.checkpoint_module`."""

    def __init__(self, owner: Any, created: Sequence[tf.Variable]) -> None:
        super().__init__(name="model")
        parts = _owner_parts(owner)
        for key, value in parts.items():
            # an attribute of the owner shadowing tf.Module's own (``variables``, ``name``...)
            setattr(self, key + "_" if hasattr(tf.Module, key) else key, value)
        reached: dict[int, tf.Variable] = {}
        _walk_variables(list(parts.values()), reached)
        untracked: dict[str, tf.Variable] = {}
        for var in created:
            if id(var) not in reached:
                base = name = variable_name(var)
                n = 1
                while name in untracked:
                    name, n = f"{base}_{n}", n + 1
                untracked[name] = var
        if untracked:
            self.untracked = untracked
        order = {id(v): i for i, v in enumerate(created)}
        every = sorted([*reached.values(), *untracked.values()], key=lambda v: order.get(id(v), -1))
        self._all = _Untracked(tuple(every))  # a tracked list would add a second checkpoint path

    @property
    def variables(self) -> tuple[tf.Variable, ...]:
        """Every variable of the model (Keras layers' included), as tf.Variables."""
        return self._all.value

    @property
    def trainable_variables(self) -> tuple[tf.Variable, ...]:
        return tuple(v for v in self._all.value if v.trainable)


class _Untracked:
    """Holds a value that checkpoint tracking must not follow."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _autograph(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` converted by AutoGraph, so that its Python control flow on tensors becomes graph
    control flow when it is traced: the user's tower function is, trainstack's traces around it
    are not (their conversion cost seconds at start-up). Converted once per function."""
    target = fn.__func__ if inspect.ismethod(fn) else fn
    try:
        converted = _CONVERTED[target]
    except (KeyError, TypeError):
        try:
            converted = tf.autograph.to_graph(target)
        except Exception as e:  # as tf.function does: trace it unconverted (e.g. no source code)
            logger.warning("AutoGraph could not convert %s, which is traced as written (Python "
                           "control flow on tensors will fail): %s", _fn_name(fn), e)
            converted = target
        try:
            _CONVERTED[target] = converted
        except TypeError:  # not weakly referenceable: convert it again next time
            pass
    return functools.partial(converted, fn.__self__) if inspect.ismethod(fn) else converted


_CONVERTED: weakref.WeakKeyDictionary[Any, Callable[..., Any]] = weakref.WeakKeyDictionary()
