"""What a trainer's checkpoint holds, as its owners declare it.

:class:`DeclaredCheckpoint` is the part of :class:`~trainstack.towers.TowerTrainer` that answers
``trainer.checkpoint_objects``: ``model`` (the tower function's, as the model's owner declares
it), the optimizers, what the trainer declared with
:meth:`~DeclaredCheckpoint.declare_checkpoint_objects`, and ``rng``. Optimizers held in
attributes nothing declared are found by reflection, a fallback logged with the keys it chose.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import keras

from trainstack.callbacks import tf_private
from trainstack.callbacks.checkpoint_layout import SAVER_KEYS

from ..tower.gradproc import ProcessedOptimizer, unwrap_optimizer
from ..tower.rng import rng_checkpoint

__all__ = ["DeclaredCheckpoint"]

logger = logging.getLogger("trainstack.towers")


class DeclaredCheckpoint:
    """Mixin of :class:`~trainstack.towers.TowerTrainer`: its checkpoint objects (see the module).

    Reads the trainer's ``_tower_func``, ``_optimizer``, ``_optimizers``, ``_rng`` and
    ``_adapt_optimizer`` hook, which TowerTrainer sets up."""

    _tower_func: Any
    _optimizer: Any
    _optimizers: list[Any]
    _rng: Any

    def _adapt_optimizer(self, optimizer: Any) -> Any:
        return optimizer

    def register_optimizer(self, optimizer: Any) -> None:
        """Have ``checkpoint_objects`` hold ``optimizer``, a Keras optimizer the trainer uses, as
        ``optimizer`` (``optimizer_1``, ... after the first); the TF1 room's recording of a custom
        trainer's ``minimize`` calls registers theirs. To choose the key, use
        :meth:`declare_checkpoint_objects`."""
        optimizer = unwrap_optimizer(self._adapt_optimizer(optimizer))[0]
        if optimizer is not self._optimizer and all(o is not optimizer for o in self._optimizers):
            self._optimizers.append(optimizer)

    def declare_checkpoint_objects(self, objects: Mapping[str, Any] | None = None, **named: Any) -> None:
        """Declare what the trainer's checkpoints hold besides the model: ``key -> trackable``
        (a Keras optimizer, also wrapped by ``apply_grad_processors``; a ``tf.Variable`` or
        ``tf.Module``), as a dict and/or keyword arguments. A custom trainer calls it in its
        ``__init__``, e.g. for a GAN's two optimizers::

            self.d_opt, self.g_opt = model.optimizers()
            self.declare_checkpoint_objects(d_optimizer=self.d_opt, g_optimizer=self.g_opt)

        The keys are the checkpoint's (``d_optimizer/...``) whatever the attributes holding
        the objects are called, so renaming an attribute keeps the checkpoint. ``model`` and
        ``rng`` are the model's (declared by its owner: ``ModelDesc.checkpoint_objects()``,
        ``TowerFunc(owner=...)``) and the savers' keys are reserved. A later call adds keys
        (or replaces those it repeats). See :attr:`checkpoint_objects`."""
        items = {**(dict(objects) if objects is not None else {}), **named}
        who = f"{type(self).__name__}.declare_checkpoint_objects()"
        checked = {}
        for key, obj in items.items():
            if not isinstance(key, str) or not key:
                raise TypeError(f"{who}: keys must be non-empty strings, got {key!r}")
            if key in ("model", "rng") or key in SAVER_KEYS:
                raise ValueError(f"{who}: key {key!r} is reserved ('model' and 'rng' are the model's, declared "
                                 "by its owner: ModelDesc.checkpoint_objects() or TowerFunc(owner=...); "
                                 f"{sorted(SAVER_KEYS)} are the savers'); choose another")
            obj = unwrap_optimizer(self._adapt_optimizer(obj))[0]  # the Keras optimizer (of a wrapper)
            if not isinstance(obj, tf_private.Trackable):
                raise TypeError(f"{who}: {key}={obj!r:.80} is {type(obj).__name__}, which a checkpoint "
                                "cannot hold; expected a Keras optimizer, a tf.Variable or a tf.Module")
            checked[key] = obj
        self.__dict__.setdefault("_declared_objects", {}).update(checked)

    @property
    def optimizers(self) -> dict[str, Any]:
        """Every Keras optimizer the trainer checkpoints, by checkpoint key: those declared
        with :meth:`declare_checkpoint_objects`, by their declared keys; ``optimizer`` (the one
        ``setup_graph`` made); then, the fallback, the trainer's attributes holding optimizers
        nothing declared (also wrapped by ``apply_grad_processors``, or in lists and dicts), by
        attribute name without leading underscores (``d_opt``, ``opts_0``), logged once with
        how to declare them; then those :func:`minimize` used, as ``optimizer``,
        ``optimizer_1``, ... ."""
        found: dict[str, Any] = {}
        seen: set[int] = set()
        declared = self.__dict__.get("_declared_objects", {})
        for key, obj in declared.items():
            if isinstance(obj, keras.optimizers.Optimizer):
                found[key] = obj
                seen.add(id(obj))
        reserved = {"model", "rng", *declared}

        def add(key: str, opt: Any) -> str | None:
            if id(opt) in seen:
                return None
            seen.add(id(opt))
            base, n = key, 1
            while key in found or key in reserved:
                key, n = f"{base}_{n}", n + 1
            found[key] = opt
            return key

        if self._optimizer is not None:
            add("optimizer", self._optimizer)
        guessed: list[tuple[str, str]] = []
        for name, value in vars(self).items():
            if name in _NOT_SCANNED:
                continue
            for key, opt in _optimizers_in(name.lstrip("_") or name, value):
                chosen = add(key, opt)
                if chosen is not None:
                    guessed.append((chosen, name))
        for opt in self._optimizers:
            add("optimizer", opt)
        if guessed:
            self._log_guessed_optimizers(tuple(guessed))
        return found

    def _log_guessed_optimizers(self, guessed: tuple[tuple[str, str], ...]) -> None:
        """The fallback's one log line (per set of keys): the keys it chose and how to declare them."""
        if self.__dict__.get("_guessed_optimizers_logged") == guessed:
            return
        self.__dict__["_guessed_optimizers_logged"] = guessed
        logger.warning(
            "%s declares no checkpoint keys for optimizers it holds, so their keys were taken from the "
            "names of the attributes holding them: %s. Renaming such an attribute changes the checkpoint, "
            "and resuming from an older one then fails. Declare them in __init__: "
            "self.declare_checkpoint_objects(%s).", type(self).__name__,
            ", ".join(f"{key} (self.{name})" for key, name in guessed),
            ", ".join(f"{key}=self.{name}" for key, name in guessed))

    @property
    def checkpoint_objects(self) -> dict[str, Any]:
        """What a checkpoint holds, as its owners declare it: ``model`` (the tower function's
        :attr:`~TowerFunc.checkpoint_module`, keyed as the model's owner declares:
        ``ModelDesc.checkpoint_objects()``, ``TowerFunc(owner=...)``); what the trainer
        declared with :meth:`declare_checkpoint_objects`; every optimizer of
        :attr:`optimizers` (``optimizer`` for the one ``setup_graph`` made; optimizers held in
        attributes nothing declared are found as a fallback, logged once), so that
        ``ModelSaver`` saves the optimizers' state of a custom trainer (a GAN's two); and
        ``rng``, the state of the model's random generators (dropout masks; see rng.py), when
        it has any, so that a resumed run draws what an uninterrupted one would.

        A subclass may also override this property and return the whole dict itself."""
        if self._tower_func is None:
            raise RuntimeError(f"{type(self).__name__}.checkpoint_objects exists after setup_graph(): "
                               "the model's variables are created there")
        objects: dict[str, Any] = {"model": self._tower_func.checkpoint_module}
        objects.update(self.optimizers)
        for key, obj in self.__dict__.get("_declared_objects", {}).items():
            objects.setdefault(key, obj)
        if self._rng is None:
            self._rng = rng_checkpoint(self._tower_func.model_owner) or False
        if self._rng:
            objects["rng"] = self._rng
        return objects


#: the trainer's attributes the optimizers' fallback does not scan (they are declared, or bookkeeping)
_NOT_SCANNED = frozenset({"_optimizer", "_optimizers", "_declared_objects", "_guessed_optimizers_logged"})


def _optimizers_in(key: str, value: Any) -> list[tuple[str, Any]]:
    """(key, Keras optimizer) for the optimizers ``value`` holds (itself, or in a list/dict)."""
    if isinstance(value, ProcessedOptimizer):
        value = value.optimizer
    if isinstance(value, keras.optimizers.Optimizer):
        return [(key, value)]
    if isinstance(value, (list, tuple)):
        return [pair for i, v in enumerate(value) for pair in _optimizers_in(f"{key}_{i}", v)
                if not isinstance(v, (list, tuple, dict))]
    if isinstance(value, dict):
        return [pair for k, v in value.items() if isinstance(k, str) and not isinstance(v, (list, tuple, dict))
                for pair in _optimizers_in(f"{key}_{k}", v)]
    return []
