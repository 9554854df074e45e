"""Towers: one replicate of the model, built by a tower function under a TowerContext.

:class:`TowerFunc` wraps a tower function (``ModelDesc.build_graph`` is one). It is called
once per training tower, per inference tower and per trace of a step, so the model is built
from objects made once (layers in ``ModelDesc.__init__``). Each call records a
:class:`TowerHandle` in ``tower_func.towers``, through which named tensors are read later.
Only the first build of the first tower may create variables (TF1's ``get_variable`` reuse,
in TF2 form); a variable made anywhere else is a :class:`VariableReuseError`. Variables are
named without the tower's scope (``dense/kernel``), as tensorpack's were. The guide:
``docs/tutorials/trainer.md``.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import weakref
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager as ContextManager
from typing import Any

import tensorflow as tf

from trainstack.inputs import InputSignatureError, normalize_signature

from .context import TowerContext, get_current_tower_context
from .handles import TowerHandle, TowerHandles
from .owner import (
    ModelCheckpoint,
    declare_owner,
    declares_checkpoint,
    find_model_owner,
    fn_name,
    frozen_variable_ids,
    is_model_desc,
    log_guessed_owner,
)

__all__ = ["TowerFunc", "VariableReuseError"]

logger = logging.getLogger("trainstack.towers")


class VariableReuseError(ValueError):
    """A tower function created a variable where only existing variables may be used."""

    # Exception's own __init__ lets autograph re-raise it with its type when it crosses a trace
    __init__ = Exception.__init__


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

    ``autograph=True`` has AutoGraph convert ``fn`` before each trace, as ``tf.function``
    does, so that Python ``if``/``for``/``while`` on tensors become graph control flow. It is
    off by default (a TowerFunc given as ``fn`` passes on its own setting), as in Keras' ``fit`` and in tensorpack: converting costs about 20 ms a
    function at start-up, and an unconverted function that needs it fails at once with an
    error naming this switch (a ModelDesc's ``autograph = True``).
    """

    #: Hook: the class of the handle each build records (a subclass may resolve more names)
    handle_class: type[TowerHandle] = TowerHandle
    #: convert ``fn`` with AutoGraph before each trace (see the class docstring)
    autograph: bool = False

    def __init__(self, fn: Callable[..., Any], input_signature: Sequence[tf.TensorSpec],
                 owner: Any = None, autograph: bool | None = None) -> None:
        if isinstance(fn, TowerFunc):
            owner = fn._declared_owner if owner is None else owner
            autograph = fn.autograph if autograph is None else autograph
            fn = fn.fn
        if not callable(fn):
            raise TypeError(f"a tower function must be callable, got {fn!r}")
        self.fn: Callable[..., Any] = fn
        self.autograph = bool(autograph)
        #: the owner given as ``owner=`` (a dict wrapped in a DeclaredOwner), or None
        self._declared_owner: Any = declare_owner(owner, fn)
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
        """(model owner, how it was found): "declared", "method" (of an owner that declares:
        ``checkpoint_objects()``, a Keras layer or ``tf.Module``), "attributes" (a method of an
        object that does not: its attributes), "found model" (a ModelDesc the function reads),
        "names" (what it reads, by its names for them) or "none"."""
        if self._declared_owner is not None:
            return self._declared_owner, "declared"
        bound = getattr(self.fn, "__self__", None)
        found = find_model_owner(self.fn)
        if found is None:
            return None, "none"
        if bound is not None and found is bound:
            declared = declares_checkpoint(found) or isinstance(found, (tf.keras.layers.Layer, tf.Module))
            return found, "method" if declared else "attributes"
        return found, "found model" if is_model_desc(found) else "names"

    @property
    def variables(self) -> list[tf.Variable]:
        """The variables the tower function created (in the first tower), in creation order."""
        return list(self._variables)

    @property
    def trainable_variables(self) -> list[tf.Variable]:
        """The trainable ones among :attr:`variables` (Keras layers frozen with
        ``layer.trainable = False`` excluded)."""
        frozen = frozen_variable_ids(self.model_owner)
        return [v for v in self._variables if v.trainable and id(v) not in frozen]

    def __call__(self, *inputs: Any) -> Any:
        ctx = get_current_tower_context()
        if ctx is None:
            raise RuntimeError(f"tower function {fn_name(self.fn)} must be called under a TowerContext, "
                               "e.g. `with TowerContext('tower0', is_training=True): tower_func(*inputs)`")
        if len(inputs) != len(self._signature):
            raise InputSignatureError(
                f"tower function {fn_name(self.fn)} takes {len(self._signature)} inputs "
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
        handle = self.handle_class(ctx, inputs, self._signature, tower_func=self)
        self._building_in_graph = not tf.executing_eagerly()
        with tf.variable_creator_scope(self._creator), self._tracing(ctx):
            outputs = self._call_fn(inputs)
        handle.outputs = outputs
        self.towers._add(handle)
        if ctx.name == self._first_tower:
            self._creation_open = False
        return outputs

    def _call_fn(self, inputs: Sequence[Any]) -> Any:
        """``fn(*inputs)``: converted by AutoGraph in a trace if :attr:`autograph`; unconverted,
        Python control flow on a tensor is an error that names the switch."""
        if not self._building_in_graph:
            return self.fn(*inputs)
        if self.autograph:
            return _autograph(self.fn)(*inputs)
        try:
            return self.fn(*inputs)
        except tf.errors.OperatorNotAllowedInGraphError as e:
            raise tf.errors.OperatorNotAllowedInGraphError(
                f"tower function {fn_name(self.fn)} uses a tensor as a Python bool or iterates over "
                "it (Python `if`/`while`/`for`/`and`/`or`/`assert` on a tensor), which a traced graph "
                "cannot run. Write it with tf.cond / tf.while_loop, or have AutoGraph convert the "
                "function as tf.function does: `autograph = True` on the ModelDesc (a class "
                "attribute), or TowerFunc(fn, input_signature, autograph=True). TensorFlow said: "
                f"{str(e).split('. ')[0]}.") from e

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
                f"({self._first_tower!r}) of tower function {fn_name(self.fn)} creates variables, "
                "the other towers reuse them. Create layers and variables once (e.g. in "
                "ModelDesc.__init__) and use them in the tower function")
        if not self._creation_open:
            raise VariableReuseError(
                f"tower {tower!r} tried to create variable {name!r} on a later call of tower function "
                f"{fn_name(self.fn)}: variables are created on its first call only, and it is called "
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
                raise RuntimeError(f"tower function {fn_name(self.fn)} has not built a tower yet; "
                                   "its variables (and checkpoint) exist after the first one")
            owner, how = self._resolve_owner()
            self._checkpoint_module = module = ModelCheckpoint(owner, self._variables)
            if how in ("found model", "names", "attributes"):
                log_guessed_owner(self, owner, how, module)
        return self._checkpoint_module

    def __repr__(self) -> str:
        return f"TowerFunc({fn_name(self.fn)}, inputs={[s.name for s in self._signature]})"


def _autograph(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` converted by AutoGraph, so that its Python control flow on tensors becomes graph
    control flow when it is traced. Converted once per function."""
    target = fn.__func__ if inspect.ismethod(fn) else fn
    try:
        converted = _CONVERTED[target]
    except (KeyError, TypeError):
        try:
            converted = tf.autograph.to_graph(target)
        except Exception as e:  # as tf.function does: trace it unconverted (e.g. no source code)
            logger.warning("AutoGraph could not convert %s, which is traced as written (Python "
                           "control flow on tensors will fail): %s", fn_name(fn), e)
            converted = target
        try:
            _CONVERTED[target] = converted
        except TypeError:  # not weakly referenceable: convert it again next time
            pass
    return functools.partial(converted, fn.__self__) if inspect.ismethod(fn) else converted


_CONVERTED: weakref.WeakKeyDictionary[Any, Callable[..., Any]] = weakref.WeakKeyDictionary()
