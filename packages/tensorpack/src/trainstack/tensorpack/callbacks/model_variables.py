"""The variables of a trainer's model by name, for the callbacks of tensorpack's API that name a variable as
tensorpack's graph did (``conv0/W``): the tower function's (the TF1 room names them by ``variable_scope``)."""
from __future__ import annotations

from typing import Any

from trainstack.callbacks import variable_name
from trainstack.tensorpack.tf1 import model_variables as tower_variables

__all__ = ["model_variables"]


def model_variables(trainer: Any) -> dict[str, Any]:
    """``{name without ':0': variable}`` of the variables of ``trainer.tower_func``'s model, as TF1's collections
    listed them (the TF1 room's ``model_variables``); empty for a trainer that has no tower function."""
    try:
        tower_func = trainer.tower_func
    except (AttributeError, RuntimeError):  # a bare loop trainer, or a tower trainer before setup_graph
        return {}
    return {variable_name(v): v for v in tower_variables(tower_func)}
