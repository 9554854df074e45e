"""PredictConfig and OfflinePredictor: a model's inference tower, restored from a checkpoint, with no trainer.

::

    config = PredictConfig(model=Model(), input_names=["image"], output_names=["prob"],
                           session_init="train_log/mnist")      # a checkpoint directory or prefix
    predictor = OfflinePredictor(config)
    prob, = predictor(images)

The predictor builds the tower function as its only tower (``TowerContext(
"predict_tower", is_training=False)``; outputs are named as inside any tower,
``"prob"`` for ``tf.identity(x, name="prob")``), which creates the model's
variables, then sets them with ``session_init`` (anything
:func:`~trainstack.towers.SmartInit` takes: a checkpoint written by
``ModelSaver``, a dict of arrays, ...). A ``ModelSaver`` checkpoint holds the
model under the key ``model`` (the tower function's
:attr:`~trainstack.towers.TowerFunc.checkpoint_module`) and the optimizer under
``optimizer``; a predictor has no optimizer, so the latter is left unread
(reported once, at INFO level).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from trainstack.callbacks.checkpoint_layout import checkpoint_value_names, checkpoint_variables, display_name
from trainstack.loop.checks import check_bool

from ..session import ChainInit, CheckpointInit, DictRestore, SessionInit, SmartInit
from ..session.checkpoint_init import _listing
from ..tower.model_desc import ModelDescBase
from ..tower.tower import TowerFunc
from .predictor import OnlinePredictor

__all__ = ["PredictConfig", "OfflinePredictor"]

#: The name of an offline predictor's tower. (tensorpack's was "", no name scope: in TF 2 a tower's
#: tensors are looked up through its handle, and a name gives clearer lookup errors.)
PREDICT_TOWER = "predict_tower"


def _name_list(arg: str, names: Any, allow_empty: bool = False) -> list[str]:
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) and n for n in names):
        raise TypeError(f"PredictConfig({arg}=...) must be a list of names, got {names!r}")
    if not names and not allow_empty:
        raise ValueError(f"PredictConfig({arg}=...) must name at least one tensor")
    return list(names)


class PredictConfig:
    """What an :class:`OfflinePredictor` (or a :class:`~trainstack.towers.ModelExporter`) builds.

    The tower function comes from one of:

    1. ``model``: a :class:`~trainstack.towers.ModelDescBase`; its ``build_graph``
       with its ``get_input_signature()``;
    2. ``tower_func``: a :class:`~trainstack.towers.TowerFunc`;
    3. ``tower_func``: a plain function, with ``input_signature`` (named ``tf.TensorSpec``).

    ``input_names`` (default: every input) are the inputs a predictor takes, by their
    spec names (the others are given zeros, see :class:`OnlinePredictor`), or names of
    tensors made in the tower with TensorFlow's own ``tf.compat.v1.placeholder_with_default`` (fed instead
    of their default, e.g. a GAN's ``z``);
    ``output_names`` are tensor names inside the tower (``tf.identity(x, name="prob")``).
    ``session_init``: how to set the variables (anything :func:`SmartInit` takes; None
    keeps their initial values). ``return_input``: predictors return ``(inputs, outputs)``.
    (tensorpack's TF1 arguments, ``session_creator`` and ``create_graph``, are
    ``trainstack.tensorpack``'s PredictConfig's.)
    """

    def __init__(self, model: ModelDescBase | None = None,
                 tower_func: TowerFunc | Callable[..., Any] | None = None,
                 input_signature: Sequence[tf.TensorSpec] | None = None,
                 input_names: Sequence[str] | None = None, output_names: Sequence[str] | None = None,
                 session_init: Any = None, return_input: bool = False) -> None:
        if model is not None:
            if not isinstance(model, ModelDescBase):
                raise TypeError(f"PredictConfig(model=...) must be a ModelDescBase, got {model!r}")
            if tower_func is not None or input_signature is not None:
                raise ValueError("PredictConfig: give either model=, or tower_func= (with input_signature= "
                                 "for a plain function), not both")
            self.input_signature = model.get_input_signature()
            self.tower_func = model.make_tower_func()
        elif isinstance(tower_func, TowerFunc):
            if input_signature is not None and tuple(input_signature) != tower_func.input_signature:
                raise ValueError(f"PredictConfig: input_signature {list(input_signature)} differs from the "
                                 f"TowerFunc's {list(tower_func.input_signature)}; leave it out")
            self.tower_func = tower_func
            self.input_signature = tower_func.input_signature
        elif callable(tower_func):
            if input_signature is None:
                raise ValueError("PredictConfig(tower_func=<function>) needs input_signature= (a list of "
                                 "named tf.TensorSpec), or pass a TowerFunc or model=")
            self.tower_func = TowerFunc(tower_func, input_signature)
            self.input_signature = self.tower_func.input_signature
        else:
            raise TypeError(f"PredictConfig needs model= (a ModelDesc) or tower_func= (a TowerFunc, or a "
                            f"function with input_signature=), got model={model!r}, "
                            f"tower_func={tower_func!r}")
        all_inputs = [s.name for s in self.input_signature]
        self.input_names = all_inputs if input_names is None else _name_list(
            "input_names", input_names, allow_empty=True)
        # names that are not inputs of the tower function must name placeholder_with_default
        # tensors inside the tower (optional inputs); the predictor checks them when it builds
        if output_names is None:
            raise ValueError("PredictConfig needs output_names: the names of the tensors to predict")
        self.output_names = _name_list("output_names", output_names)
        self.session_init: SessionInit = SmartInit(session_init)
        self.return_input = check_bool("PredictConfig", "return_input", return_input)

    def __repr__(self) -> str:
        return (f"PredictConfig({self.tower_func!r}, input_names={self.input_names}, "
                f"output_names={self.output_names}, session_init={self.session_init!r})")


def _restored(init: SessionInit) -> set[str] | None:
    """Names of the variables ``init`` set (or skipped on request); None when it sets none."""
    if isinstance(init, ChainInit):
        parts = [_restored(i) for i in init.inits]
        found = [p for p in parts if p is not None]
        return set().union(*found) if found else None
    report = init.report
    if report is None:
        return None
    return set(report.restored) | set(report.skipped)


def _source_keys(init: SessionInit) -> list[str]:
    """What the initializer holds, for error messages: checkpoint keys or dict keys."""
    if isinstance(init, ChainInit):
        return [k for i in init.inits for k in _source_keys(i)]
    if isinstance(init, CheckpointInit):
        return checkpoint_value_names(init.path)
    if isinstance(init, DictRestore):
        return sorted(init._values)
    return []


class OfflinePredictor(OnlinePredictor):
    """A predictor built from a :class:`PredictConfig`, needing no trainer.

    Callable like :class:`OnlinePredictor`: ``predictor(*arrays) -> [np.ndarray, ...]``
    (``(arrays, outputs)`` with ``return_input``). ``checkpoint_objects`` is the
    layout of the trainers' checkpoints without the optimizer: ``{"model":
    tower_func.checkpoint_module}``.

    Several predictors of one config share the model's variables (they live in the
    model's layers); each one restores ``session_init`` into them when built.
    """

    def __init__(self, config: PredictConfig) -> None:
        if not isinstance(config, PredictConfig):
            raise TypeError(f"OfflinePredictor takes a PredictConfig, got {config!r}")
        self.config = config
        self.return_input = config.return_input
        super().__init__(config.tower_func, config.input_names, config.output_names,
                         tower_name=PREDICT_TOWER)
        config.session_init.init(self)
        self._check_restored(config.session_init)

    def _check_restored(self, init: SessionInit) -> None:
        """A predictor with some variables left at their initial values predicts garbage: an
        initializer that restores fewer than all of the model's variables is an error."""
        restored = _restored(init)
        if restored is None:  # JustCurrentSession: the variables keep their values on purpose
            return
        paths = {display_name(path, var): path for path, var in checkpoint_variables(self.checkpoint_objects)}
        names = sorted(paths)
        missing = [n if paths[n] == n else f"{paths[n]} ({n})" for n in names if n not in restored]
        if not missing:
            return
        keys = _source_keys(init)
        raise ValueError(
            f"OfflinePredictor: {init!r} set {len(names) - len(missing)} of the {len(names)} variables of "
            f"{self.tower_func!r}; it has no value for [{_listing(missing, 20)}]. It holds: [{_listing(keys, 20)}]. "
            "The model's variables are keyed by the ModelDesc's attributes (model/<attribute>/...); "
            "build the predictor from the model the checkpoint was trained with (PredictConfig(model="
            "Model())), or pass a dict of arrays keyed by the variables' paths (DictRestore)")

    #: the trainers' checkpoints also hold the optimizer and the random state: training state a
    #: predictor leaves unused
    checkpoint_keys_not_needed = ("optimizer", "rng")

    @property
    def checkpoint_objects(self) -> dict[str, Any]:
        """What the initializer restores: the model, keyed as the trainers' checkpoints key it."""
        return {"model": self.tower_func.checkpoint_module}

    def __call__(self, *arrays: Any) -> Any:
        outputs = super().__call__(*arrays)
        return (arrays, outputs) if self.return_input else outputs

    def __repr__(self) -> str:
        return f"OfflinePredictor({self.config!r})"
