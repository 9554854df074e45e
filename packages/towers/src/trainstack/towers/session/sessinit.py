# Over 400 lines on purpose: the initializers share one walk of the checkpointed objects (_walk) and one
# pairing with a checkpoint (checkpoint_layout.match_checkpoint, the savers' layout).
"""Initializers: set a trainer's variables from a checkpoint, a dict of arrays, or a chain of them.

tensorpack's ``SessionInit`` for TensorFlow 2. There is no session: an initializer
writes into the variables of ``trainer.checkpoint_objects`` (the dict name -> trackable
that the savers of the callbacks layer checkpoint), after the trainer has built its
graph (all variables exist) and before the first step. ``init(trainer)`` logs what was
restored and, as warnings, what was missing on either side; the details stay in
``initializer.report`` (an :class:`InitReport`).

- :class:`CheckpointInit` (alias :class:`SaverRestore`): a ``tf.train.Checkpoint``
  written by ``ModelSaver``/``MinSaver`` or by plain TensorFlow, restored with
  ``tf.train.Checkpoint(**checkpoint_objects).restore(path)``. Values match variables
  by object structure (the names of ``checkpoint_objects`` and the attributes below
  them), as in TensorFlow, paired once before anything is restored by
  :func:`trainstack.callbacks.checkpoint_layout.match_checkpoint` (the layout the savers
  write); the savers' ``loop_state``/``monitor_state``/``save_counter``/``best_stat`` are
  not model values and are left alone (see ``restore_loop_state`` to resume; ModelSaver
  restores ``monitor_state`` itself when a run resumes). A run resuming from its own
  checkpoint (``resume=True``) stops with a :class:`ResumeError` when the checkpoint lacks
  a variable; loading a pretrained or foreign one warns with the list. A name-based (TF1,
  tensorpack) checkpoint, keyed by variable name (``conv0/W``, ``bn/mean/EMA``), is read by
  name as tensorpack's ``SaverRestore`` did (see ``CheckpointInit._restore_by_name``).
- :class:`DictRestore`: ``{variable name: array}``, by Keras 3 ``variable.path``
  (``"dense/kernel"``), ``tf.Variable.name`` (a ``":0"`` suffix is optional) or the
  variable's path under ``checkpoint_objects`` (``"w"`` for ``{"w": tf.Variable(...)}``).
- :class:`ChainInit` runs several in order; :class:`JustCurrentSession` does nothing;
  :func:`SmartInit` picks one from what it is given (None, a path, a dict, a list...).
"""
from __future__ import annotations

import abc
import collections
import dataclasses
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from trainstack.callbacks import checkpoint_objects_of
from trainstack.callbacks.checkpoint_layout import (
    SAVER_KEYS,
    CheckpointMatch,
    NameBasedCheckpointError,
    is_variable,
    match_checkpoint,
    value_name,
    walk,
)

__all__ = ["InitReport", "SessionInit", "JustCurrentSession", "CheckpointInit", "SaverRestore",
           "SaverRestoreRelaxed", "DictRestore", "ChainInit", "SmartInit", "get_model_loader", "ResumeError"]

logger = logging.getLogger("trainstack.towers")


class ResumeError(ValueError):
    """A run resuming from its own checkpoint would train some variables from fresh values:
    the checkpoint lacks them. Raised before anything is restored."""


@dataclasses.dataclass
class InitReport:
    """What an initializer did.

    Variables are named by their Keras ``path`` (``"dense/kernel"``), other variables by
    their path under ``checkpoint_objects`` (``"w"``, ``"ema/avg"``); values the source
    holds for no variable by their checkpoint key or dict key.
    """

    source: str
    restored: list[str] = dataclasses.field(default_factory=list)
    #: variables of the trainer the source has no value for (left as they were)
    missing: list[str] = dataclasses.field(default_factory=list)
    #: values in the source that no variable of the trainer matched
    unused: list[str] = dataclasses.field(default_factory=list)
    #: matched but deliberately left as they were (``ignore=``, or a shape mismatch with
    #: ``ignore_mismatch=True``)
    skipped: list[str] = dataclasses.field(default_factory=list)
    #: values under checkpoint keys the trainer says it does not need (its
    #: ``checkpoint_keys_not_needed``, e.g. a predictor's ``("optimizer",)``): reported, not warned
    not_needed: list[str] = dataclasses.field(default_factory=list)
    #: who did not need them (the trainer's class name)
    not_needed_by: str = ""
    #: a variable's object path under ``checkpoint_objects`` (its checkpoint key without the
    #: suffix, e.g. ``model/fc/_kernel``), by its name above, where the two differ
    paths: dict[str, str] = dataclasses.field(default_factory=dict)
    #: training state outside the model (the optimizer's variables, its step counter) that a
    #: name-based (TF1) checkpoint has no value for: it starts fresh, as under tensorpack (INFO)
    fresh: list[str] = dataclasses.field(default_factory=list)
    #: the source is keyed by variable name (a TF1 checkpoint): ``not_needed`` is logged name by name
    by_name: bool = False

    def set_aside(self, keys: Sequence[str], by: str) -> None:
        """Move the unused values under the top-level checkpoint ``keys`` to ``not_needed``."""
        aside = [k for k in self.unused if k.split("/", 1)[0] in keys]
        if aside or not self.not_needed:
            self.not_needed_by = by
        self.unused = [k for k in self.unused if k not in aside]
        self.not_needed.extend(aside)

    def log(self) -> None:
        logger.info("Restored %d variables from %s.", len(self.restored), self.source)
        if self.missing:
            logger.warning("%s has no value for these %d variables of the trainer; they keep the values "
                           "they have (their initial values, unless an earlier initializer set them) "
                           "and train from there: %s", self.source, len(self.missing),
                           ", ".join(f"{self.paths[n]} ({n})" if n in self.paths else n for n in self.missing))
        if self.unused:
            logger.warning("These values in %s match no variable of the trainer and were not used: %s",
                           self.source, ", ".join(self.unused))
        if self.skipped:
            logger.info("Not restored from %s (ignored or mismatched): %s", self.source,
                        ", ".join(self.skipped))
        if self.fresh:
            logger.info("%s has no value for the training state %s; it starts fresh.", self.source,
                        ", ".join(self.fresh))
        if self.not_needed:
            logger.info("%d values in %s are not needed by %s (%s) and were not used.", len(self.not_needed),
                        self.source, self.not_needed_by,
                        ", ".join(sorted(self.not_needed) if self.by_name
                                  else sorted({k.split("/", 1)[0] for k in self.not_needed})))


class SessionInit(abc.ABC):
    """Base class: sets the variables of a trainer; subclasses implement ``_run_init``.

    ``init(trainer)`` runs once the trainer's graph is built; ``trainer`` is anything with
    ``checkpoint_objects`` (a dict name -> tf.Variable, tf.Module or Keras object), and
    optionally ``checkpoint_keys_not_needed``: top-level checkpoint keys whose values it
    expects to leave unused (reported at INFO level instead of warned about).
    """

    #: the report of the last ``init`` (None before, and for initializers that restore nothing)
    report: InitReport | None = None

    def init(self, trainer: Any) -> None:
        """Initialize the variables of ``trainer``; log what was done."""
        logger.info("Initializing variables with %r ...", self)
        self.report = self._run_init(trainer)
        if self.report is not None:
            self.report.set_aside(getattr(trainer, "checkpoint_keys_not_needed", ()), type(trainer).__name__)
            self.report.log()

    @abc.abstractmethod
    def _run_init(self, trainer: Any) -> InitReport | None:
        """Set the variables; return what was done (None when nothing was restored)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class JustCurrentSession(SessionInit):
    """Do nothing: variables keep the values they were created with."""

    def _run_init(self, trainer: Any) -> None:
        return None


class ChainInit(SessionInit):
    """Run several initializers in order (later ones overwrite what earlier ones set)."""

    def __init__(self, sess_inits: Sequence[SessionInit]) -> None:
        inits = list(sess_inits)
        for i, init in enumerate(inits):
            if not isinstance(init, SessionInit):
                raise TypeError(f"ChainInit takes a list of SessionInit; item {i} is {init!r} "
                                "(wrap paths, dicts, ... with SmartInit)")
        self.inits = inits

    def _run_init(self, trainer: Any) -> None:
        for init in self.inits:
            init.init(trainer)

    def __repr__(self) -> str:
        return f"ChainInit({self.inits!r})"


# -- walking the objects (the walk and the pairing are checkpoint_layout's) ---------------------------
def _walk(objects: Mapping[str, Any]) -> dict[int, tuple[str, Any]]:
    """Every trackable reachable from ``objects``: id -> (shortest path, object), breadth first."""
    return walk(objects)


def _variables(objects: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(path under checkpoint_objects, variable) for every variable reachable from ``objects``."""
    return [(path, obj) for path, obj in _walk(objects).values() if is_variable(obj)]


def _display_name(path: str, var: Any) -> str:
    return var.path if isinstance(var, keras.Variable) else path


def _strip_tensor_suffix(name: str) -> str:
    return name[:-2] if name.endswith(":0") else name


# -- restoring checkpoints -------------------------------------------------------------------------------
def _resolve_checkpoint(path: str | os.PathLike) -> str:
    """A checkpoint prefix from a prefix, a directory, a ``checkpoint`` state file or a shard name."""
    path = os.path.expanduser(os.fspath(path))
    if tf.io.gfile.isdir(path) or os.path.basename(path) == "checkpoint":
        directory = path if tf.io.gfile.isdir(path) else os.path.dirname(path)
        latest = tf.train.latest_checkpoint(directory)
        if latest is None:
            raise FileNotFoundError(f"no checkpoint in directory {directory!r} (no 'checkpoint' state "
                                    "file naming one)")
        return latest
    if path.endswith(".index"):
        path = path[:-len(".index")]
    elif ".data-" in os.path.basename(path):
        path = path[:path.rindex(".data-")]
    if not tf.io.gfile.exists(path + ".index"):
        raise FileNotFoundError(f"no checkpoint at {path!r}: expected a checkpoint prefix "
                                f"({path}.index must exist) or a directory holding checkpoints")
    return path


class CheckpointInit(SessionInit):
    """Restore ``trainer.checkpoint_objects`` from a ``tf.train.Checkpoint``.

    ``path``: a checkpoint prefix (``train_log/x/model-300``), a directory (its latest
    checkpoint), a ``checkpoint`` state file, or an ``.index``/``.data-*`` file. It is
    resolved here, so a missing checkpoint fails early; ``self.path`` is the prefix.

    Variables the checkpoint lacks keep their values and values the trainer lacks are not
    used; both are logged as warnings, as tensorpack did when loading a pretrained or
    foreign model (``strict=True``: a ValueError before anything is restored). A value
    whose shape differs from its variable's is a ValueError, or with
    ``ignore_mismatch=True`` a warning and the variable keeps its value.

    ``resume=True``: the checkpoint is this run's own (``AutoResumeTrainConfig`` and
    ``get_sessinit_resume`` pass it), so a variable of ``checkpoint_objects`` (model,
    optimizer, ...) that it lacks is a :class:`ResumeError` naming the variables and the
    checkpoint, raised before anything is restored: a resumed run never trains some of its
    variables from fresh values. Values the trainer lacks are still only a warning.

    ``ignore``: objects not to restore, each named by a key of ``checkpoint_objects``
    (``"optimizer"``: load the model weights only, e.g. to fine-tune), a variable's name
    as in the report (Keras path ``"adam/learning_rate"``, or path under
    ``checkpoint_objects``), or a checkpoint key (without ``/.ATTRIBUTES/VARIABLE_VALUE``).
    An ignored object and what can be reached only through it keep their values; a model
    variable that the optimizer also tracks is still restored through the model. A name
    that matches nothing is a ValueError.
    """

    def __init__(self, path: str | os.PathLike, ignore: Iterable[str] = (), *, strict: bool = False,
                 ignore_mismatch: bool = False, resume: bool = False) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"{type(self).__name__} takes a checkpoint path, got {path!r}")
        if os.fspath(path).endswith((".npz", ".npy")):
            raise ValueError(f"{os.fspath(path)!r} is a NumPy file, not a TensorFlow checkpoint; load it "
                             "with SmartInit(path) or DictRestore(dict(np.load(path)))")
        if isinstance(ignore, str):
            ignore = (ignore,)
        self.path = _resolve_checkpoint(path)
        self.ignore = tuple(_strip_tensor_suffix(name).strip("/") for name in ignore)
        self.strict = bool(strict)
        self.ignore_mismatch = bool(ignore_mismatch)
        self.resume = bool(resume)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r}{', resume=True' if self.resume else ''})"

    def _run_init(self, trainer: Any) -> InitReport:
        objects = checkpoint_objects_of(trainer, repr(self))
        objects = {k: v for k, v in objects.items() if k not in SAVER_KEYS}
        try:
            match = match_checkpoint(self.path, objects)
        except NameBasedCheckpointError:
            return self._restore_by_name(trainer)
        shapes = match.shapes
        reachable = walk(objects)
        names = {vid: _display_name(path, obj) for vid, (path, obj) in reachable.items()}

        found = match.found
        report = InitReport(source=f"checkpoint {self.path}")
        report.missing = sorted(names[id(var)] for _, var in match.missing)
        report.paths = {names[id(var)]: path for path, var in match.missing if names[id(var)] != path}
        report.unused = list(match.unused)

        ignored = frozenset(self._ignored_ids(objects, reachable, found))
        kept = match.without(ignored) if ignored else match
        if self.resume and kept.missing:
            raise ResumeError(_resume_message(self, trainer, kept))
        candidates = kept.found
        mismatched = {vid: f"{names[vid]}: checkpoint {tuple(shapes[key])}, variable {tuple(var.shape)}"
                      for vid, (key, var) in candidates.items() if tuple(shapes[key]) != tuple(var.shape)}
        if mismatched and not self.ignore_mismatch:
            raise ValueError(f"{self!r}: shapes differ for {'; '.join(mismatched.values())}. Pass "
                             "ignore_mismatch=True to keep these variables as they are")
        if mismatched:
            logger.warning("%r: shapes differ, these variables keep their values: %s", self,
                           "; ".join(mismatched.values()))
        if self.strict and (report.missing or report.unused):
            raise ValueError(f"{self!r} (strict): variables not in the checkpoint: {report.missing}; "
                             f"checkpoint values with no variable: {report.unused}")

        # a variable is a leaf: leaving one out changes no other match
        restored = [vid for vid in candidates if vid not in mismatched]
        report.restored = sorted(names[vid] for vid in restored)
        report.skipped = sorted(names[vid] for vid in found if vid not in restored)
        match.restore(ignored | frozenset(mismatched))
        return report

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
        (``SaverRestoreRelaxed``) a warning, the variable keeping its value. ``ignore`` names values
        not to load; ``resume=True`` is refused: a run resumes from its own object-based checkpoint."""
        if self.resume:
            raise ResumeError(f"cannot resume from {self.path}: it is a name-based (TF1) checkpoint, not one "
                              "this run wrote; start from it with session_init=SmartInit(path) instead")
        reader = tf.train.load_checkpoint(self.path)
        names = sorted(reader.get_variable_to_shape_map())
        values = {name: reader.get_tensor(name) for name in names if name not in self.ignore}
        variables = _variables(checkpoint_objects_of(trainer, repr(self)))
        # strict: nothing may change when the check fails, so the values are put back then
        before = [(var, tf.identity(var).numpy()) for _, var in variables] if self.strict else []
        try:
            report = DictRestore(values, ignore_mismatch=self.ignore_mismatch)._run_init(trainer)
        except ValueError as e:
            raise ValueError(f"{self!r} (a name-based checkpoint): {e}") from None
        report.source, report.by_name = f"checkpoint {self.path} (by name)", True
        # the variables warned about by their TF1 names (conv0/W), as tensorpack did; Keras ones by their paths
        tf1_names = {_display_name(path, var): (_display_name(path, var) if isinstance(var, keras.Variable)
                                                else _strip_tensor_suffix(var.name)) for path, var in variables}
        model = {_display_name(path, var) for path, var in variables if path.split("/", 1)[0] == "model"}
        # (report.restored keeps the display names: predictors check them against their variables)
        report.fresh = sorted(tf1_names.get(n, n) for n in report.missing if n not in model)
        report.missing = sorted(tf1_names.get(n, n) for n in report.missing if n in model)
        report.skipped = sorted([*(tf1_names.get(n, n) for n in report.skipped),
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

    def _ignored_ids(self, objects: Mapping[str, Any], reachable: Mapping[int, tuple[str, Any]],
                     found: Mapping[int, tuple[str, Any]]) -> list[int]:
        """ids of the objects named in ``ignore``."""
        ids: dict[str, int] = {}
        for vid, (path, obj) in reachable.items():
            ids.setdefault(path, vid)
            ids.setdefault(_display_name(path, obj), vid)
        for vid, (key, _) in found.items():
            ids.setdefault(value_name(key), vid)
        unknown = [name for name in self.ignore if name not in ids]
        if unknown:
            raise ValueError(f"{self!r}: ignore={unknown} names nothing; name a key of "
                             f"checkpoint_objects ({sorted(objects)}), a Keras variable path or a "
                             "checkpoint key (as listed by tf.train.list_variables)")
        return [ids[name] for name in self.ignore]


_TRAINING_SUFFIXES = ("/Adam", "/Adam_1", "/Momentum", "/Adadelta", "/Adadelta_1", "/RMSProp", "/RMSProp_1",
                      "/Adagrad", "/AccumGrad")


def _is_training_name(name: str) -> bool:
    """tensorpack's guess (``varmanip.is_training_name``) that a checkpoint value only serves
    training (an optimizer slot, a summary's moving average, the step counter...)."""
    return (name.endswith(_TRAINING_SUFFIXES) or name.startswith(("EMA/", "AccumGrad", "apply_gradients"))
            or "/EMA/" in name or name in ("global_step", "learning_rate", "beta1_power", "beta2_power"))


def _resume_message(init: CheckpointInit, trainer: Any, match: CheckpointMatch) -> str:
    missing = [f"{path} ({var.path})" if isinstance(var, keras.Variable) and var.path != path else path
               for path, var in sorted(match.missing, key=lambda pv: pv[0])]
    unused = f" The checkpoint holds values that no variable matched: {_listing(match.unused)}." \
        if match.unused else ""
    return (
        f"cannot resume {type(trainer).__name__} from its checkpoint {init.path}: the checkpoint has no "
        f"value for {len(missing)} of its variables: {_listing(missing)}. Resuming would train them from "
        f"fresh values, so nothing was restored and training does not start.{unused} A checkpoint "
        "holds what its owners declare, by name: a renamed attribute or variable that a key comes "
        "from changes it. Rename it back, or declare the keys (ModelDesc.checkpoint_objects(), "
        "TowerFunc(fn, inputs, owner=...), the trainer's declare_checkpoint_objects(...)); to start "
        "from this checkpoint as from a pretrained model instead, pass session_init=SmartInit(path) "
        "(missing variables then keep their initial values, with a warning)")


def _listing(names: Sequence[str], n: int = 30) -> str:
    shown = ", ".join(names[:n])
    return shown + (f", ... ({len(names) - n} more)" if len(names) > n else "")


class SaverRestore(CheckpointInit):
    """tensorpack's name for :class:`CheckpointInit`: ``SaverRestore(model_path, prefix=None, ignore=())``.

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


class SaverRestoreRelaxed(SaverRestore):
    """:class:`SaverRestore` that skips (with a warning) values whose shape differs from their variable's."""

    def __init__(self, model_path: str | os.PathLike, prefix: str | None = None,
                 ignore: Iterable[str] = (), **kwargs: Any) -> None:
        kwargs.setdefault("ignore_mismatch", True)
        super().__init__(model_path, prefix, ignore, **kwargs)


# -- restoring from arrays -------------------------------------------------------------------------------
class DictRestore(SessionInit):
    """Set variables from a dict ``{variable name: array}``.

    A key names a variable by its Keras ``path`` (``"dense/kernel"``), its ``tf.Variable``
    name, or its path under ``checkpoint_objects`` (``"w"``); a ``":0"`` suffix is
    optional. A key naming several variables is a ValueError. Values are cast to the
    variable's dtype when NumPy casts them safely or within a kind (float64 -> float32);
    a value whose shape differs is a ValueError (``ignore_mismatch=True``: a warning, the
    variable keeps its value). Everything is checked before any variable is set.
    """

    def __init__(self, variable_dict: Mapping[str, Any], ignore_mismatch: bool = False) -> None:
        if not isinstance(variable_dict, Mapping):
            raise TypeError("DictRestore takes a dict {variable name: array}, got "
                            f"{type(variable_dict).__name__}")
        values: dict[str, Any] = {}
        for name, value in variable_dict.items():
            if not isinstance(name, str):
                raise TypeError(f"DictRestore: keys must be variable names (str), got {name!r}")
            values[_strip_tensor_suffix(name)] = value
        self._values = values
        self.ignore_mismatch = bool(ignore_mismatch)

    def __repr__(self) -> str:
        return f"DictRestore(<{len(self._values)} arrays>)"

    def _run_init(self, trainer: Any) -> InitReport:
        variables = _variables(checkpoint_objects_of(trainer, repr(self)))
        # paths first; a tf.Variable's own name only when no path matches (Keras names repeat: "kernel")
        by_path: dict[str, dict[int, tuple[str, Any]]] = collections.defaultdict(dict)
        by_name: dict[str, dict[int, tuple[str, Any]]] = collections.defaultdict(dict)
        for path, var in variables:
            entry = (_display_name(path, var), var)
            for name in {path, _display_name(path, var)}:
                by_path[name][id(var)] = entry
            by_name[_strip_tensor_suffix(var.name)][id(var)] = entry

        report = InitReport(source=repr(self))
        updates: dict[int, tuple[str, Any, np.ndarray]] = {}
        problems = []
        for key, value in self._values.items():
            candidates = by_path.get(key) or by_name.get(key)
            if not candidates:
                report.unused.append(key)
                continue
            if len(candidates) > 1:
                raise ValueError(f"DictRestore: {key!r} names {len(candidates)} variables "
                                 f"({sorted(n for n, _ in candidates.values())}); use their Keras "
                                 "paths or their paths under checkpoint_objects")
            ((vid, (name, var)),) = candidates.items()
            if vid in updates:
                raise ValueError(f"DictRestore: keys {updates[vid][0]!r} and {key!r} both name "
                                 f"variable {name}")
            array = np.asarray(value)
            dtype = tf.as_dtype(var.dtype).as_numpy_dtype
            if tuple(array.shape) != tuple(var.shape):
                problems.append(f"{key}: value {tuple(array.shape)}, variable {tuple(var.shape)}")
                report.skipped.append(name)
                continue
            if array.dtype != dtype:
                if not np.can_cast(array.dtype, dtype, "same_kind"):
                    raise TypeError(f"DictRestore: {key!r} is {array.dtype}, which does not cast to "
                                    f"variable {name} ({np.dtype(dtype)})")
                array = array.astype(dtype)
            updates[vid] = (key, var, array)
        if problems and not self.ignore_mismatch:
            raise ValueError(f"DictRestore: shapes differ for {'; '.join(problems)}. Pass "
                             "ignore_mismatch=True to keep these variables as they are")
        if problems:
            logger.warning("DictRestore: shapes differ, these variables keep their values: %s",
                           "; ".join(problems))
        for _, var, array in updates.values():
            var.assign(array)
        restored_ids = set(updates)
        skipped = set(report.skipped)
        report.restored = sorted(_display_name(path, var) for path, var in variables
                                 if id(var) in restored_ids)
        report.missing = sorted(_display_name(path, var) for path, var in variables
                                if id(var) not in restored_ids and _display_name(path, var) not in skipped)
        report.unused.sort()
        return report


# -- picking one -----------------------------------------------------------------------------------------
def _load_arrays(filename: str) -> dict[str, Any]:
    if not tf.io.gfile.exists(filename):
        raise FileNotFoundError(f"SmartInit: {filename!r} does not exist")
    logger.info("Loading a dict of arrays from %s ...", filename)
    with tf.io.gfile.GFile(filename, "rb") as f:
        if filename.endswith(".npz"):
            with np.load(f) as data:
                return dict(data)
        # tensorpack's .npy files hold a pickled dict: load only files you trust.
        obj = np.load(f, allow_pickle=True)
    if obj.shape != () or not isinstance(obj.item(), dict):
        raise ValueError(f"SmartInit: {filename!r} holds an array of shape {obj.shape}, not a dict "
                         "{variable name: array}")
    return obj.item()


def SmartInit(obj: Any, *, ignore_mismatch: bool = False) -> SessionInit:  # noqa: N802 (tensorpack's name)
    """The initializer for ``obj``:

    - None, ``""`` or an empty dict/list: :class:`JustCurrentSession` (do nothing);
    - a :class:`SessionInit`: itself;
    - a dict ``{variable name: array}``: :class:`DictRestore`;
    - a path to an ``.npz`` file (or a tensorpack ``.npy`` holding a pickled dict; load only
      files you trust): :class:`DictRestore` of its arrays;
    - a directory or checkpoint prefix: :class:`CheckpointInit`;
    - a list or tuple of these: :class:`ChainInit`, in order.

    ``ignore_mismatch``: values whose shape differs from their variable's are skipped with a
    warning instead of raising.
    """
    if obj is None or (isinstance(obj, (str, dict, list, tuple)) and not obj):
        return JustCurrentSession()
    if isinstance(obj, SessionInit):
        return obj
    if isinstance(obj, (list, tuple)):
        return ChainInit([SmartInit(x, ignore_mismatch=ignore_mismatch) for x in obj])
    if isinstance(obj, os.PathLike):
        obj = os.fspath(obj)
    if isinstance(obj, str):
        path = os.path.expanduser(obj)
        if path.endswith((".npz", ".npy")):
            return DictRestore(_load_arrays(path), ignore_mismatch=ignore_mismatch)
        if tf.io.gfile.isdir(path) or tf.io.gfile.glob(path + "*"):
            return CheckpointInit(path, ignore_mismatch=ignore_mismatch)
        raise FileNotFoundError(f"SmartInit: {obj!r} is no checkpoint prefix, directory, .npz or .npy file")
    if isinstance(obj, Mapping):
        return DictRestore(obj, ignore_mismatch=ignore_mismatch)
    raise TypeError(f"SmartInit takes None, a SessionInit, a checkpoint path or directory, a .npz/.npy "
                    f"path, a dict {{variable name: array}}, or a list of these; got {type(obj).__name__}")


#: tensorpack's older name for :func:`SmartInit`.
get_model_loader = SmartInit
