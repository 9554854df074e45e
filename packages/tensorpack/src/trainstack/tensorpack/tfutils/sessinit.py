"""tensorpack 0.11's ``tensorpack.tfutils.sessinit``: the core's initializers (``trainstack.towers``) and
tensorpack's for them: ``SaverRestore`` (``SaverRestoreRelaxed``), the core's ``CheckpointInit`` that also
reads a name-based (TF1, tensorpack) checkpoint by variable name, and ``SmartInit`` (``get_model_loader``),
the core's, picking ``SaverRestore`` for a checkpoint path."""
from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from trainstack.callbacks import checkpoint_objects_of
from trainstack.callbacks.checkpoint_layout import (
    SAVER_KEYS,
    CheckpointMatch,
    NameBasedCheckpointError,
    checkpoint_variables,
    display_name,
    is_saver_key,
    match_checkpoint,
    strip_tensor_suffix,
    value_name,
)
from trainstack.towers import ChainInit, CheckpointInit, DictRestore, InitReport, JustCurrentSession, SessionInit
from trainstack.towers import SmartInit as CoreSmartInit

from .._replaced import unprovided

__all__ = [
    "SessionInit", "ChainInit", "SaverRestore", "SaverRestoreRelaxed", "DictRestore", "JustCurrentSession",
    "get_model_loader", "SmartInit"
]

#: the core's initializers log there
logger = logging.getLogger("trainstack.towers")


@dataclasses.dataclass
class NameBasedReport(InitReport):
    """What :class:`SaverRestore` did with a name-based (TF1) checkpoint: the core's report, whose
    ``not_needed`` (tensorpack's optimizer slots, training-only values) is logged name by name, and
    ``fresh``: training state outside the model (the optimizer's variables, its step counter) that
    the checkpoint has no value for: it starts fresh, as under tensorpack (INFO)."""

    fresh: list[str] = dataclasses.field(default_factory=list)

    def not_needed_listing(self) -> list[str]:
        return sorted(self.not_needed)

    def log(self) -> None:
        super().log()
        if self.fresh:
            logger.info("%s has no value for the training state %s; it starts fresh.", self.source,
                        ", ".join(self.fresh))


class SaverRestore(CheckpointInit):
    """tensorpack's ``SaverRestore(model_path, prefix=None, ignore=())``: the core's :class:`CheckpointInit`,
    which also reads a name-based (TF1, tensorpack) checkpoint by variable name (:meth:`_restore_by_name`).

    ``prefix`` (load a checkpoint into a name scope) has no meaning for object-based
    checkpoints, which match values by object structure, not by name: it must be None.
    To load a sub-model's checkpoint, list that sub-model in ``checkpoint_objects`` under
    the name the checkpoint used, or use :class:`DictRestore` with renamed keys.
    """

    def __init__(self, model_path: str | os.PathLike, prefix: str | None = None, ignore: Iterable[str] = (),
                 **kwargs: Any) -> None:
        if prefix is not None:
            raise TypeError(
                f"{type(self).__name__}(prefix={prefix!r}): TF2 checkpoints match values by object "
                "structure, not by variable name, so a name prefix means nothing. List the sub-model in "
                "checkpoint_objects under the name the checkpoint used, or use DictRestore with renamed keys")
        super().__init__(model_path, ignore, **kwargs)

    def _run_init(self, trainer: Any) -> InitReport:
        """The core's object-based restore, then, as tensorpack's ``Saver`` restored by name, each model
        variable of the TF1 room that the object structure did not pair (see :meth:`_tf1_name_pairs`)."""
        if self.resume:
            return super()._run_init(trainer)
        objects = {k: v for k, v in checkpoint_objects_of(trainer, repr(self)).items() if k not in SAVER_KEYS}
        try:
            match = match_checkpoint(self.path, objects)
        except NameBasedCheckpointError:
            return self._restore_by_name(trainer)
        by_name = self._tf1_name_pairs(match)   # a shape mismatch raises here, before anything is restored
        strict, self.strict = self.strict, False   # checked below, after the pairing by name
        before = [(var, tf.identity(var).numpy()) for _, var in checkpoint_variables(objects)] if strict else []
        try:
            report = super()._run_init(trainer)
        finally:
            self.strict = strict
        for name, (key, var) in by_name.items():
            if name not in report.missing:
                continue
            report.missing.remove(name)
            report.paths.pop(name, None)
            if value_name(key) in report.unused:
                report.unused.remove(value_name(key))
            if tuple(match.shapes[key]) == tuple(var.shape):
                var.assign(match.reader.get_tensor(key))
                report.restored.append(name)
            else:
                report.skipped.append(name)
        report.restored.sort()
        report.skipped.sort()
        if strict and (report.missing or report.unused):
            for var, value in before:
                var.assign(value)
            raise ValueError(f"{self!r} (strict): variables not in the checkpoint: {report.missing}; "
                             f"checkpoint values with no variable: {report.unused}")
        return report

    def _tf1_name_pairs(self, match: CheckpointMatch) -> dict[str, tuple[str, Any]]:
        """{variable's name in the report: (checkpoint key, variable)} for each variable the object structure
        left unpaired whose TF1 name (``gen/conv1/W``) exactly one unpaired value of the checkpoint was stored
        under. A checkpoint keys a tensorpack model's variables by the model's attributes that hold them
        (``GAN.py``'s ``collect_variables`` sets ``self.g_vars`` in training only), so a predictor of the same
        model reaches them by another path (``model/untracked/gen.Sconv1.SW``); tensorpack's ``Saver`` matched
        them by name. Keras variables are left to the object structure. A shape mismatch is a ValueError, or
        with ``ignore_mismatch`` a warning (the variable keeps its value)."""
        unpaired: dict[str, list[str]] = {}
        for node_id, node in enumerate(match.graph.nodes):
            if node_id not in match.nodes:
                for attr in node.attributes:
                    if attr.full_name and not is_saver_key(attr.checkpoint_key):
                        unpaired.setdefault(attr.full_name, []).append(attr.checkpoint_key)
        pairs = {}
        for path, var in match.missing:
            name = display_name(path, var)
            keys = unpaired.get(strip_tensor_suffix(var.name), [])
            if isinstance(var, keras.Variable) or len(keys) != 1 or name in self.ignore:
                continue
            if tuple(match.shapes[keys[0]]) != tuple(var.shape):
                message = (f"{self!r}: shapes differ for {name} (by its name {strip_tensor_suffix(var.name)}): "
                           f"checkpoint {tuple(match.shapes[keys[0]])}, variable {tuple(var.shape)}")
                if not self.ignore_mismatch:
                    raise ValueError(message + ". Pass ignore_mismatch=True to keep it as it is")
                logger.warning("%s; it keeps its value", message)
            pairs[name] = (keys[0], var)
        return pairs

    def _restore_by_name(self, trainer: Any) -> InitReport:
        """A name-based (TF1) checkpoint, as tensorpack's ``SaverRestore`` loaded it: each value
        into the variable of its name (``conv0/W``: the TF1 name of a layer function's variable,
        a ``tf.Variable`` name or a Keras path, as :class:`DictRestore` matches them). Variables
        the checkpoint lacks keep their values and values no variable has are not used, both
        warned with their names; tensorpack's optimizer slots and training-only values
        (``conv0/W/Momentum``, ``EMA/...``, ``global_step``, ...) are reported at INFO level, and so
        is the trainer's training state the checkpoint lacks (the Keras optimizer's variables: they
        start fresh, as tensorpack's did when loading a model into a new optimizer). A shape
        mismatch is a ValueError (tensorpack's Saver failed too), or with ``ignore_mismatch=True``
        a warning, the variable keeping its value. ``ignore`` names values
        not to load; ``resume=True`` is refused: a run resumes from its own object-based checkpoint."""
        if self.resume:
            return super()._restore_by_name(trainer)  # the core's ResumeError
        reader = tf.train.load_checkpoint(self.path)
        names = sorted(reader.get_variable_to_shape_map())
        values = {name: reader.get_tensor(name) for name in names if name not in self.ignore}
        variables = checkpoint_variables(checkpoint_objects_of(trainer, repr(self)))
        # strict: nothing may change when the check fails, so the values are put back then
        before = [(var, tf.identity(var).numpy()) for _, var in variables] if self.strict else []
        try:
            report = DictRestore(values, ignore_mismatch=self.ignore_mismatch)._run_init(trainer)
        except ValueError as e:
            raise ValueError(f"{self!r} (a name-based checkpoint): {e}") from None
        report = NameBasedReport(**{f.name: getattr(report, f.name) for f in dataclasses.fields(report)})
        report.source = f"checkpoint {self.path} (by name)"
        # the variables warned about by their TF1 names (conv0/W), as tensorpack did; Keras ones by their paths
        by_name = {display_name(path, var): (display_name(path, var) if isinstance(var, keras.Variable)
                                                else strip_tensor_suffix(var.name)) for path, var in variables}
        model = {display_name(path, var) for path, var in variables if path.split("/", 1)[0] == "model"}
        # (report.restored keeps the display names: predictors check them against their variables)
        report.fresh = sorted(by_name.get(n, n) for n in report.missing if n not in model)
        report.missing = sorted(by_name.get(n, n) for n in report.missing if n in model)
        report.skipped = sorted([*(by_name.get(n, n) for n in report.skipped),
                                 *(n for n in names if n in self.ignore)])
        training_only = [n for n in report.unused if _is_training_name(n)]
        report.unused = [n for n in report.unused if n not in training_only]
        report.not_needed, report.not_needed_by = training_only, "the model (optimizer or training-only values)"
        if self.strict and (report.missing or report.unused):
            for var, value in before:
                var.assign(value)
            raise ValueError(f"{self!r} (strict): variables not in the checkpoint: {report.missing}; "
                             f"checkpoint values with no variable: {report.unused}")
        return report


class SaverRestoreRelaxed(SaverRestore):
    """:class:`SaverRestore` that skips (with a warning) values whose shape differs from their variable's."""

    def __init__(self, model_path: str | os.PathLike, prefix: str | None = None,
                 ignore: Iterable[str] = (), **kwargs: Any) -> None:
        kwargs.setdefault("ignore_mismatch", True)
        super().__init__(model_path, prefix, ignore, **kwargs)


def SmartInit(obj: Any, *, ignore_mismatch: bool = False) -> SessionInit:  # noqa: N802 (tensorpack's name)
    """tensorpack's SmartInit: the core's :func:`~trainstack.towers.SmartInit`, but a checkpoint path (a
    prefix or a directory) is a :class:`SaverRestore`, which also reads a TF1 checkpoint by name, and a
    ``.npy`` file (tensorpack's pickled dict of arrays: load only files you trust) a :class:`DictRestore`,
    as tensorpack's did. A :class:`SessionInit` given is used as it is."""
    if isinstance(obj, (list, tuple)) and obj:
        return ChainInit([SmartInit(x, ignore_mismatch=ignore_mismatch) for x in obj])
    if isinstance(obj, (str, os.PathLike)) and os.fspath(obj).endswith(".npy"):
        return DictRestore(_load_npy(os.path.expanduser(os.fspath(obj))), ignore_mismatch=ignore_mismatch)
    init = CoreSmartInit(obj, ignore_mismatch=ignore_mismatch)
    if type(init) is CheckpointInit and not isinstance(obj, SessionInit):
        return SaverRestore(init.path, ignore_mismatch=ignore_mismatch)
    return init


#: tensorpack's older name for :func:`SmartInit`.
get_model_loader = SmartInit


_TRAINING_SUFFIXES = ("/Adam", "/Adam_1", "/Momentum", "/Adadelta", "/Adadelta_1", "/RMSProp", "/RMSProp_1",
                      "/Adagrad", "/AccumGrad")


def _is_training_name(name: str) -> bool:
    """tensorpack's guess (``varmanip.is_training_name``) that a checkpoint value only serves
    training (an optimizer slot, a summary's moving average, the step counter...)."""
    return (name.endswith(_TRAINING_SUFFIXES) or name.startswith(("EMA/", "AccumGrad", "apply_gradients"))
            or "/EMA/" in name or name in ("global_step", "learning_rate", "beta1_power", "beta2_power"))


def _load_npy(filename: str) -> dict[str, Any]:
    """The dict of arrays a tensorpack ``.npy`` file holds (a pickled dict: load only files you trust)."""
    if not tf.io.gfile.exists(filename):
        raise FileNotFoundError(f"SmartInit: {filename!r} does not exist")
    with tf.io.gfile.GFile(filename, "rb") as f:
        obj = np.load(f, allow_pickle=True)
    if obj.shape != () or not isinstance(obj.item(), dict):
        raise ValueError(f"SmartInit: {filename!r} holds an array of shape {obj.shape}, not a dict "
                         "{variable name: array}")
    return obj.item()







__getattr__ = unprovided(__name__)
