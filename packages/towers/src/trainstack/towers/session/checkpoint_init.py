"""CheckpointInit: restore a trainer from a tf.train.Checkpoint.

Values are paired with variables once, before anything is restored, by
:func:`trainstack.callbacks.checkpoint_layout.match_checkpoint` (the savers' layout); a
name-based (TF1, tensorpack) checkpoint is refused, naming the tensorpack layer's SaverRestore. See
:mod:`trainstack.towers.session.sessinit` for what an initializer is.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import keras
import tensorflow as tf

from trainstack.callbacks import checkpoint_objects_of
from trainstack.callbacks.checkpoint_layout import (
    SAVER_KEYS,
    CheckpointMatch,
    NameBasedCheckpointError,
    display_name,
    match_checkpoint,
    strip_tensor_suffix,
    value_name,
    walk,
)
from trainstack.loop.checks import check_bool

from .sessinit import InitReport, ResumeError, SessionInit

__all__ = ["CheckpointInit"]

logger = logging.getLogger("trainstack.towers")


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

    ``resume=True``: the checkpoint is this run's own (``AutoResumeTrainConfig`` passes it),
    so a variable of ``checkpoint_objects`` (model, optimizer, ...) that it lacks is a
    :class:`ResumeError` naming the variables and the checkpoint, raised before anything is
    restored: a resumed run never trains some of its variables from fresh values. Values the trainer lacks are still only a warning.

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
        self.ignore = tuple(strip_tensor_suffix(name).strip("/") for name in ignore)
        self.strict = check_bool(type(self).__name__, "strict", strict)
        self.ignore_mismatch = check_bool(type(self).__name__, "ignore_mismatch", ignore_mismatch)
        self.resume = check_bool(type(self).__name__, "resume", resume)

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
        names = {vid: display_name(path, obj) for vid, (path, obj) in reachable.items()}

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
        """Hook: a name-based (TF1) checkpoint, keyed by variable name (``conv0/W``) rather than by
        object structure. The core refuses it, naming ``trainstack.tensorpack``'s ``SaverRestore`` /
        ``SmartInit``, which read it by name as tensorpack did; ``resume=True`` is refused: a run
        resumes from its own object-based checkpoint."""
        if self.resume:
            raise ResumeError(f"cannot resume from {self.path}: it is a name-based (TF1) checkpoint, not one "
                              "this run wrote; start from it with session_init=SmartInit(path) instead")
        raise ValueError(
            f"{self!r}: {self.path} is a name-based (TF1) checkpoint, keyed by variable name, not a "
            "tf.train.Checkpoint. Load it by name with trainstack.tensorpack's SaverRestore(path) or SmartInit(path) "
            "(from trainstack.tensorpack import SmartInit), as tensorpack did, or with DictRestore of its values "
            "(tf.train.load_checkpoint(path).get_tensor(name) for each name)")

    def _ignored_ids(self, objects: Mapping[str, Any], reachable: Mapping[int, tuple[str, Any]],
                     found: Mapping[int, tuple[str, Any]]) -> list[int]:
        """ids of the objects named in ``ignore``."""
        ids: dict[str, int] = {}
        for vid, (path, obj) in reachable.items():
            ids.setdefault(path, vid)
            ids.setdefault(display_name(path, obj), vid)
        for vid, (key, _) in found.items():
            ids.setdefault(value_name(key), vid)
        unknown = [name for name in self.ignore if name not in ids]
        if unknown:
            raise ValueError(f"{self!r}: ignore={unknown} names nothing; name a key of "
                             f"checkpoint_objects ({sorted(objects)}), a Keras variable path or a "
                             "checkpoint key (as listed by tf.train.list_variables)")
        return [ids[name] for name in self.ignore]


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

