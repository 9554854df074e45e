"""tensorpack 0.11's ``tensorpack.predict.base``: ``OnlinePredictor`` and ``OfflinePredictor`` from
``trainstack.towers``, and tensorpack's ``PredictorBase``: the abstract predictor (``__call__(*dp)`` is
``_do_call(dp)``, with the inputs too when ``return_input``), of which the towers layer's predictors count as
subclasses (registered), as tensorpack's were."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from trainstack.towers import OfflinePredictor, OnlinePredictor

from .._replaced import stand_in_names, unprovided

__all__ = ["PredictorBase", "OnlinePredictor", "OfflinePredictor"] + stand_in_names(__name__)


class PredictorBase(ABC):
    """Base class of predictors: subclasses implement ``_do_call(dp)``, the outputs of the inputs ``dp``;
    ``return_input`` makes a call return ``(dp, outputs)``."""

    return_input: bool = False

    def __call__(self, *dp: Any) -> Any:
        output = self._do_call(dp)
        return (dp, output) if self.return_input else output

    @abstractmethod
    def _do_call(self, dp: tuple[Any, ...]) -> Any:
        """The outputs for the input datapoint ``dp`` (one value per input name)."""


PredictorBase.register(OnlinePredictor)  # OfflinePredictor is its subclass

__getattr__ = unprovided(__name__)
