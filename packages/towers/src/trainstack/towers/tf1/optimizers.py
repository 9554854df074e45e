"""TF1 optimizers: tensorpack's ``opt.minimize(loss, var_list=..., name=...)`` and its ordering.

Keras 3 optimizers have no ``minimize``. Inside the switch (a tower's trace, or
the ``__init__`` of a trainer that builds its graph tensorpack's way) Keras
optimizers and ``apply_grad_processors`` wrappers get tensorpack's, which is
:func:`~.recording.minimize`; ``tf.control_dependencies([op])`` around later
``minimize`` calls orders them as TF1 did (see :mod:`.recording`). Elsewhere
``opt.minimize`` does not exist, as in Keras 3.
"""
from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from ..tower.gradproc import ProcessedOptimizer
from .recording import control_dependencies, minimize
from .switch import Frame, Patch

__all__ = ["PATCHES"]


def _minimize(original: Any, frame: Frame, optimizer: Any, loss: Any, var_list: Any = None,
              name: str | None = None, **kwargs: Any) -> Any:
    return minimize(optimizer, loss, var_list=var_list, name=name, **kwargs)


def _control_dependencies(original: Any, frame: Frame, control_inputs: Any) -> Any:
    return control_dependencies(original, control_inputs)


PATCHES = [
    Patch(lambda: keras.optimizers.Optimizer, "minimize", _minimize, only_if_missing=True),
    Patch(lambda: ProcessedOptimizer, "minimize", _minimize, only_if_missing=True),
    Patch(lambda: tf, "control_dependencies", _control_dependencies),
    Patch(lambda: tf.compat.v1, "control_dependencies", _control_dependencies),
]
