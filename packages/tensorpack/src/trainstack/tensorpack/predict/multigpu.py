"""tensorpack 0.11's ``tensorpack.predict.multigpu``: ``MultiTowerOfflinePredictor`` (one predictor per GPU) and
``DataParallelOfflinePredictor`` (one call running a batch on each GPU), on the towers layer's predictors.

Tower ``t`` runs on ``/gpu:<t>``, as in tensorpack; where TensorFlow sees no GPU, on the CPU (tensorpack's
sessions allowed soft placement, which did the same). The model's variables are built and restored once, by an
:class:`OfflinePredictor` of the config (its ``session_init``, checked as there); every tower shares them.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from trainstack.callbacks import logger
from trainstack.towers import OfflinePredictor, OnlinePredictor, PredictConfig

from .._replaced import stand_in_names, unprovided
from .base import PredictorBase

__all__ = ["MultiTowerOfflinePredictor", "DataParallelOfflinePredictor"] + stand_in_names(__name__)


def _tower_devices(who: str, towers: Sequence[int]) -> list[str]:
    """``/gpu:<t>`` for each tower ``t``, or the CPU for every tower when TensorFlow sees no GPU."""
    if not isinstance(towers, (list, tuple)) or not towers or not all(isinstance(t, int) for t in towers):
        raise ValueError(f"{who}(towers=...) must be a non-empty list of GPU ids, got {towers!r}")
    gpus = len(tf.config.list_logical_devices("GPU"))
    if not gpus:
        logger.info(f"{who}: TensorFlow sees no GPU; the towers {list(towers)} run on the CPU.")
        return ["/cpu:0"] * len(towers)
    missing = [t for t in towers if t >= gpus]
    if missing:
        raise ValueError(f"{who}: towers {missing} name GPUs this process does not see ({gpus} GPU(s))")
    return [f"/gpu:{t}" for t in towers]


def _tower_predictors(who: str, config: PredictConfig, towers: Sequence[int]) -> list[OnlinePredictor]:
    """One predictor per tower (``tower<t>`` on its device), after the config's model is built and restored."""
    devices = _tower_devices(who, towers)
    OfflinePredictor(config)  # builds the model's variables and runs config.session_init into them
    predictors = []
    for idx, (t, device) in enumerate(zip(towers, devices)):
        logger.info(f"Building graph for predict tower 'tower{t}' on device {device} ...")
        predictors.append(OnlinePredictor(config.tower_func, config.input_names, config.output_names,
                                          tower_name=f"tower{t}", device=device, index=idx))
    return predictors


class MultiTowerOfflinePredictor(PredictorBase):
    """One :class:`OnlinePredictor` per tower of ``towers`` (GPU ids), sharing the model's variables; called, it
    is tower 0's predictor, as tensorpack's."""

    def __init__(self, config: PredictConfig, towers: Sequence[int]) -> None:
        self.return_input = config.return_input
        self.predictors = _tower_predictors(type(self).__name__, config, towers)

    def _do_call(self, dp: tuple[Any, ...]) -> list[np.ndarray]:
        return self.predictors[0](*dp)

    def get_predictor(self, n: int) -> list[OnlinePredictor]:
        """``n`` predictors, assigned to the towers round-robin (tensorpack's name and behaviour)."""
        count = len(self.predictors)
        if n >= count:
            logger.warn("n > #towers, will assign predictor to GPU by round-robin")
        return [self.predictors[k % count] for k in range(n)]

    def get_predictors(self) -> list[OnlinePredictor]:
        """The predictor of each tower."""
        return self.predictors


class DataParallelOfflinePredictor(PredictorBase):
    """One predictor over every tower: its inputs are ``[input 0 of tower 0, input 1 of tower 0, ..., input 0 of
    tower 1, ...]`` and so are its outputs (it does not split or concatenate batches), as tensorpack's. The
    towers run in one ``tf.function``, so TensorFlow runs them on their devices at the same time."""

    def __init__(self, config: PredictConfig, towers: Sequence[int]) -> None:
        self.return_input = config.return_input
        self.predictors = _tower_predictors(type(self).__name__, config, towers)
        per_tower = [p.tf_function for p in self.predictors]
        self._n_inputs = len(config.input_names)
        n = self._n_inputs
        signature = [spec for p in self.predictors for spec in p.input_signature]

        def predict(*given: tf.Tensor) -> list[tf.Tensor]:
            return [out for k, fn in enumerate(per_tower) for out in fn(*given[k * n:(k + 1) * n])]

        self._fn = tf.function(predict, input_signature=signature, autograph=False)
        self._fn.get_concrete_function()

    def _do_call(self, dp: tuple[Any, ...]) -> list[np.ndarray]:
        expected = self._n_inputs * len(self.predictors)
        if len(dp) != expected:
            raise ValueError(f"{type(self).__name__} takes {self._n_inputs} input(s) per tower, "
                             f"{expected} arrays in all, got {len(dp)}")
        return [np.asarray(o.numpy()) for o in self._fn(*dp)]


__getattr__ = unprovided(__name__)
