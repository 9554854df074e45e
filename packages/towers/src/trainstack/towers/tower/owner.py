"""The model's owner: what a tower function's checkpoint holds, as its owner declares it.

The owner protocol: an object with a ``checkpoint_objects()`` method returning ``{key: Keras
layer, tf.Module or variable}`` (or lists/dicts of them); a :class:`~trainstack.towers.ModelDesc`
is one. ``TowerFunc(fn, signature, owner=...)`` takes such an object, a dict of the same, or a
Keras layer / ``tf.Module``. Without a declared owner, what the tower function reads is found by
reflection (its closure, its arguments, the module globals it names): a fallback that warns and
names what it found.
"""
from __future__ import annotations

import functools
import inspect
import logging
import types
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import tensorflow as tf

from trainstack.callbacks.variables import is_variable, tf_variable, variable_name

if TYPE_CHECKING:
    from .tower import TowerFunc

__all__ = ["DeclaredOwner", "ModelCheckpoint", "checked_parts", "declare_owner", "declares_checkpoint", "find_model_owner",
           "fn_name", "frozen_variable_ids", "is_model_desc", "log_guessed_owner", "model_parts", "owner_parts",
           "walk_variables"]

logger = logging.getLogger("trainstack.towers")


def fn_name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def is_model_desc(x: Any) -> bool:
    """Whether ``x`` is a ModelDesc, known by its interface (model_desc.py builds on this
    module, so this one does not import it)."""
    return not isinstance(x, type) and all(
        callable(getattr(x, name, None)) for name in ("get_input_signature", "build_graph", "inputs"))


def find_model_owner(fn: Any) -> Any:
    """See :attr:`TowerFunc.model_owner`."""
    bound = getattr(fn, "__self__", None)
    if bound is not None and not isinstance(bound, types.ModuleType):
        return bound
    named: dict[str, Any] = {}
    if isinstance(fn, functools.partial):
        inner = find_model_owner(fn.func)
        if is_model_desc(inner):
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
    models = {id(v): v for v in named.values() if is_model_desc(v)}
    if len(models) == 1:
        return next(iter(models.values()))
    if models:
        return None  # several models: no single naming; variables keep their paths
    parts = {name: value for name, value in named.items()
             if not name.startswith("__") and _keep(value) is not None}
    return types.SimpleNamespace(**parts) if parts else None


class DeclaredOwner:
    """A dict given as ``TowerFunc(owner={...})``: its items are its attributes (for the code that
    reads an owner's attributes) and what ``checkpoint_objects()`` declares."""

    def __init__(self, objects: dict[str, Any]) -> None:
        self.__dict__.update(objects)

    def checkpoint_objects(self) -> dict[str, Any]:
        return dict(vars(self))

    def __repr__(self) -> str:
        return f"owner={{{', '.join(repr(k) for k in vars(self))}}}"


def declares_checkpoint(owner: Any) -> bool:
    """Whether ``owner`` follows the owner protocol: a ``checkpoint_objects()`` method (a
    trainer's ``checkpoint_objects`` property, holding this model, is not one)."""
    if owner is None or isinstance(owner, type):
        return False
    attr = inspect.getattr_static(type(owner), "checkpoint_objects", None)
    return attr is not None and callable(attr) and not isinstance(attr, property)


def declare_owner(owner: Any, fn: Any) -> Any:
    """The owner given to ``TowerFunc(fn, ..., owner=owner)``, checked (a dict: wrapped)."""
    if owner is None:
        return None
    if isinstance(owner, Mapping):
        owner = DeclaredOwner(checked_parts(dict(owner), f"TowerFunc({fn_name(fn)}, owner=...)"))
    elif not (declares_checkpoint(owner) or isinstance(owner, (tf.keras.layers.Layer, tf.Module))):
        raise TypeError(
            f"TowerFunc({fn_name(fn)}, owner={owner!r:.80}): the owner declares what the model's "
            "checkpoint holds: give an object with a checkpoint_objects() method (a ModelDesc is one), "
            "a dict {key: Keras layer, tf.Module or variable}, or a Keras layer / tf.Module")
    return owner


def checked_parts(parts: Any, who: str) -> dict[str, Any]:
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


def owner_parts(owner: Any) -> dict[str, Any]:
    """What ``owner`` checkpoints, by key: its ``checkpoint_objects()`` (checked) when it declares
    them; a Keras layer or tf.Module under ``root``; else its attributes holding layers,
    modules or variables (or containers of them)."""
    if owner is None:
        return {}
    if declares_checkpoint(owner):
        return checked_parts(owner.checkpoint_objects(), f"{type(owner).__name__}.checkpoint_objects()")
    if isinstance(owner, (tf.keras.layers.Layer, tf.Module)):
        return {"root": owner}
    return model_parts(owner)


def log_guessed_owner(tower_func: TowerFunc, owner: Any, how: str, module: tf.Module) -> None:
    """The fallback's one warning (the tower function's checkpoint module is built once): the keys
    it chose, where it found them, and how to declare them."""
    name = fn_name(tower_func.fn)
    names = list(owner_parts(owner))
    keys = [f"model/{k}" for k in names]
    if how == "attributes" and not keys:
        return  # nothing found by reflection: the variables are kept by their names (untracked)
    untracked = getattr(module, "untracked", None)
    if untracked:
        keys.append(f"model/untracked/... ({len(untracked)} variables, by their names)")
    if how == "found model":
        logger.warning("TowerFunc(%s) declares no owner; its checkpoint keys were taken from the ModelDesc "
                       "found in what it reads (its closure, arguments or globals), %s: %s. Declare it: "
                       "TowerFunc(%s, input_signature, owner=model), or pass model.build_graph.", name,
                       type(owner).__name__, ", ".join(keys) or "none", name)
        return
    if how == "attributes":
        owner_type = type(owner).__name__
        logger.warning(
            "TowerFunc(%s) is a method of %s, which declares no checkpoint_objects(), so its checkpoint "
            "keys were taken from the attributes of %s holding layers, modules or variables: %s. Renaming "
            "one of them changes the checkpoint, and resuming from an older one then fails. Declare them: "
            "give %s a method `def checkpoint_objects(self): return {%s}`, or TowerFunc(%s, input_signature, "
            "owner={...}).", name, owner_type, owner_type, ", ".join(keys), owner_type,
            ", ".join(f"{k!r}: self.{k}" for k in names), name)
        return
    logger.warning(
        "TowerFunc(%s) declares no owner, so its checkpoint keys were taken from the names the function "
        "uses for what it reads: %s. Renaming one of them changes the checkpoint, and resuming from an "
        "older one then fails. Declare them: TowerFunc(%s, input_signature, owner={%s}) (or an owner "
        "with a checkpoint_objects() method, e.g. a ModelDesc).", name, ", ".join(keys), name,
        ", ".join(f"{k!r}: {k}" for k in names))


def model_parts(obj: Any) -> dict[str, Any]:
    """The attributes of ``obj`` holding layers, modules or variables (or containers of them)."""
    parts = {}
    for key, value in vars(obj).items():
        kept = _keep(value)
        if kept is not None:
            parts[key] = kept
    return parts


def _keep(value: Any) -> Any:
    if isinstance(value, (tf.keras.layers.Layer, tf.Module)) or is_variable(value):
        return value
    if isinstance(value, (list, tuple)):
        kept = [_keep(v) for v in value]
        return kept if kept and all(k is not None for k in kept) else None
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        kept_items = {k: _keep(v) for k, v in value.items()}
        return kept_items if kept_items and all(v is not None for v in kept_items.values()) else None
    return None


def walk_variables(value: Any, out: dict[int, tf.Variable]) -> None:
    if isinstance(value, (tf.Variable, tf.keras.Variable)):
        out.setdefault(id(tf_variable(value)), tf_variable(value))
    elif isinstance(value, tf.keras.layers.Layer):
        for v in value.variables:
            walk_variables(v, out)
    elif isinstance(value, tf.Module):
        for v in value.variables:
            out.setdefault(id(v), v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            walk_variables(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            walk_variables(v, out)


def frozen_variable_ids(owner: Any) -> set[int]:
    """ids of the tf.Variables that the owner's Keras layers do not train."""
    plain_layer = isinstance(owner, (tf.keras.layers.Layer, tf.Module)) and not declares_checkpoint(owner)
    if owner is None or plain_layer:
        layers = [owner] if isinstance(owner, tf.keras.layers.Layer) else []
    else:
        layers = []
        # what the owner declares, and its attributes (a frozen layer it does not checkpoint)
        values = list(owner_parts(owner).values())
        if declares_checkpoint(owner) and not isinstance(owner, (tf.keras.layers.Layer, tf.Module)):
            values += list(model_parts(owner).values()) if hasattr(owner, "__dict__") else []
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


class ModelCheckpoint(tf.Module):
    """See :attr:`TowerFunc.checkpoint_module`."""

    def __init__(self, owner: Any, created: Sequence[tf.Variable]) -> None:
        super().__init__(name="model")
        parts = owner_parts(owner)
        for key, value in parts.items():
            # an attribute of the owner shadowing tf.Module's own (``variables``, ``name``...)
            setattr(self, key + "_" if hasattr(tf.Module, key) else key, value)
        reached: dict[int, tf.Variable] = {}
        walk_variables(list(parts.values()), reached)
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
