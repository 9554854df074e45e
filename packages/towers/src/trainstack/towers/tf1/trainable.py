"""The model's trainable variables as tensorpack's graph-side helpers see them (by name, by regex)."""
from __future__ import annotations

from typing import Any

from ..tower.tower import TowerFunc, variable_name

__all__ = ["trainable_of", "variable_name"]


def trainable_of(tower_func: TowerFunc) -> list[Any]:
    """``tower_func``'s model's trainable variables (see ``TowerFunc.model_trainable_variables``)."""
    return tower_func.model_trainable_variables()
