"""TF1 variables in a tower: ``tf.compat.v1.get_variable`` under ``tf.compat.v1.variable_scope``.

tensorpack's tutorial rule for tower functions, "use ``tf.get_variable`` instead of
``tf.Variable``", works as written. Inside a tower, ``get_variable(name, ...)``
names the variable by the enclosing variable scopes (``conv0/W``, not the tower's
name scope), creates it on the first build of the first tower, and returns the
same variable on every later trace and in every other tower, as TF1's variable
stores did (tensorpack built towers after the first with ``reuse=True``). Within
one build TF1's reuse rules hold: a second ``get_variable`` of a name needs
``reuse=True`` or ``tf.compat.v1.AUTO_REUSE`` on its scope, and ``reuse=True``
needs the variable to exist. The variables are the tower function's (the
TowerFunc records them: checkpoints, predictors and export see them under their
TF1 names). A ``custom_getter`` (the argument, or a ``variable_scope``'s, nested scopes
composing theirs as in TF1) is called as TF1 called it; tensorpack's ``remap_variables`` and
``freeze_variables`` (``layers/varreplace.py``) are such getters. Outside a tower,
``get_variable`` is TensorFlow's own.
"""
from __future__ import annotations

import weakref
from typing import Any

import tensorflow as tf

from .switch import Frame, Patch, TF1CallError

__all__ = ["PATCHES", "get_variable"]

#: the TF1 variables of each tower function, by full name
_stores: weakref.WeakKeyDictionary[Any, dict[str, tf.Variable]] = weakref.WeakKeyDictionary()

_UNSUPPORTED = {
    "regularizer": "regularize_cost(regex, l2_regularizer(...)) in build_graph",
    "partitioner": "an unpartitioned variable (TF2 has no partitioned variables)",
    "caching_device": "no argument (TF2 places reads itself)",
}


def _initial_value(initializer: Any, shape: Any, dtype: tf.DType, name: str) -> tuple[Any, Any]:
    """(a callable making the initial value, the shape), TF1's defaults: Glorot uniform for
    floating-point variables, zeros for the others."""
    if initializer is not None and not callable(initializer):
        value = tf.convert_to_tensor(initializer, dtype=dtype)
        if shape is not None and not tf.TensorShape(shape).is_compatible_with(value.shape):
            raise ValueError(f"get_variable({name!r}): shape {list(shape)} differs from the shape "
                             f"{value.shape.as_list()} of its initial value")
        array = tf.get_static_value(value)  # a tensor built in the trace (tf.zeros([3])) folds to its value
        if array is None:
            raise ValueError(f"get_variable({name!r}): its initial value {value.name} is computed from other "
                             "tensors in the tower; give a constant, an initializer, or a value that does not "
                             "depend on the tower's inputs or variables")
        return (lambda: tf.constant(array, dtype=dtype)), value.shape
    if shape is None:
        raise ValueError(f"get_variable({name!r}) needs a shape (or an initial value as initializer)")
    shape = tf.TensorShape(shape)
    if not shape.is_fully_defined():
        raise ValueError(f"get_variable({name!r}): shape {shape} must be fully defined")
    if initializer is None:
        initializer = (tf.compat.v1.glorot_uniform_initializer() if dtype.is_floating
                       else tf.compat.v1.zeros_initializer())
    return (lambda: initializer(shape.as_list(), dtype=dtype)), shape


def get_variable(frame: Frame, name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                 trainable: bool | None = None, **kwargs: Any) -> tf.Variable:
    """``tf.compat.v1.get_variable`` in the tower ``frame`` builds (see the module docstring).

    A custom getter (``custom_getter=``, or the enclosing ``variable_scope``'s, as tensorpack's
    ``remap_variables`` / ``freeze_variables`` set) is called as TF1 called it: with keyword
    arguments, ``getter`` the store's own getter and ``name`` the full name."""
    scope = tf.compat.v1.get_variable_scope()
    full = f"{scope.name}/{name}" if scope.name else name
    custom_getter = kwargs.pop("custom_getter", None) or scope.custom_getter
    if custom_getter is None:
        return _stored(frame, scope, full, shape, dtype, initializer, trainable, **kwargs)
    if trainable is None:  # resolved first, as TF1 did: getters read it (freeze_variables)
        trainable = (kwargs.get("synchronization") or tf.VariableSynchronization.AUTO) \
            != tf.VariableSynchronization.ON_READ

    def store_getter(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                     trainable: bool | None = None, **rest: Any) -> tf.Variable:
        rest.pop("reuse", None)
        _drop_tf2_defaults(frame, name, rest)
        return _stored(frame, scope, name, shape, dtype, initializer, trainable, **rest)

    return custom_getter(getter=store_getter, name=full, shape=shape, dtype=dtype, initializer=initializer,
                         trainable=trainable, reuse=scope.reuse, **kwargs)


def _stored(frame: Frame, scope: Any, full: str, shape: Any, dtype: Any, initializer: Any,
            trainable: bool | None, **kwargs: Any) -> tf.Variable:
    """The variable ``full`` of the tower function's store: created, or reused under TF1's rules."""
    for arg, instead in _UNSUPPORTED.items():
        if kwargs.get(arg) is not None:
            raise TF1CallError(f"tf.compat.v1.get_variable({full!r}, {arg}=...) in tower {frame.tower.name!r}: "
                               f"{arg} is not supported in a trainstack tower; use {instead}")
    store = _stores.setdefault(frame.tower_func, {})
    requested = frame.scratch.setdefault("tf1_variables", set())
    existing = store.get(full)
    if existing is not None:
        if full in requested and scope.reuse is False:
            raise ValueError(f"Variable {full} already exists, disallowed: tower {frame.tower.name!r} asked "
                             "for it twice. Did you mean to set reuse=True or reuse=tf.compat.v1.AUTO_REUSE "
                             "in its variable_scope?")
        if shape is not None and not tf.TensorShape(shape).is_compatible_with(existing.shape):
            raise ValueError(f"Trying to share variable {full}, but specified shape {list(shape)} and found "
                             f"shape {existing.shape.as_list()}")
        requested.add(full)
        return existing
    if scope.reuse is True:
        raise ValueError(f"Variable {full} does not exist, or was not created with tf.get_variable(): "
                         f"tower {frame.tower.name!r} asked for it with reuse=True. Did you mean to set "
                         "reuse=tf.compat.v1.AUTO_REUSE in its variable_scope?")
    dtype = tf.as_dtype(dtype or (getattr(initializer, "dtype", None) if not callable(initializer) else None)
                        or tf.float32)
    make, _ = _initial_value(initializer, shape, dtype, full)
    sync = kwargs.get("synchronization") or tf.VariableSynchronization.AUTO
    if trainable is None:
        trainable = sync != tf.VariableSynchronization.ON_READ
    # named by the variable scopes only: from the top name scope, as TowerFunc names its variables
    # relative to the tower's scope
    top = frame.tower.ns_name + "/" if frame.tower.ns_name else ""
    with tf.name_scope(top):
        variable = tf.Variable(make, name=full, dtype=dtype, trainable=trainable,
                               constraint=kwargs.get("constraint"), synchronization=sync,
                               aggregation=kwargs.get("aggregation") or tf.VariableAggregation.NONE)
    store[full] = variable
    requested.add(full)
    return variable


def _get_variable(original: Any, frame: Frame, *args: Any, **kwargs: Any) -> Any:
    if frame.tower is None or frame.tower_func is None:  # a trainer's __init__, outside any tower
        return original(*args, **kwargs)
    _drop_tf2_defaults(frame, args[0] if args else kwargs.get("name"), kwargs)
    return get_variable(frame, *args, **kwargs)


#: the collections a tower's variable belongs to anyway (the model's variables, see graph_collections)
_MODEL_COLLECTIONS = {tf.compat.v1.GraphKeys.GLOBAL_VARIABLES, tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES,
                      tf.compat.v1.GraphKeys.MODEL_VARIABLES}


def _drop_tf2_defaults(frame: Frame, name: Any, kwargs: dict) -> None:
    """Remove from ``kwargs`` the TF1 arguments every TF2 variable satisfies (a resource variable, a
    fixed shape, one of the model's variables); a value asking for anything else is refused, not
    ignored."""
    kwargs.pop("use_resource", None)  # TF2 variables are resource variables
    if kwargs.pop("validate_shape", True) is False:
        raise TF1CallError(f"tf.compat.v1.get_variable({name!r}, validate_shape=False) in tower "
                           f"{frame.tower.name!r}: a tower's variables have a fixed shape; give the full "
                           "shape (or an initial value of that shape)")
    collections = kwargs.pop("collections", None)
    other = sorted(set(collections or ()) - _MODEL_COLLECTIONS)
    if other:
        raise TF1CallError(f"tf.compat.v1.get_variable({name!r}, collections={list(collections)!r}) in tower "
                           f"{frame.tower.name!r}: TF2 has no graph collections; the variable is one of the "
                           f"model's (get_collection(GLOBAL_VARIABLES) lists it), but {other} would be "
                           "ignored. Keep the variable in the model, or hold it where the code that reads "
                           "it can find it")


PATCHES = [Patch(lambda: tf.compat.v1, "get_variable", _get_variable)]
