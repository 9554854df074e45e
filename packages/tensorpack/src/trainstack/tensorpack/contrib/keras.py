"""tensorpack 0.11's ``tensorpack.contrib.keras``: its names from ``trainstack.tensorpack.tf1``."""
from trainstack.tensorpack.tf1 import KerasModel, KerasPhaseCallback, setup_keras_trainer

__all__ = ["KerasPhaseCallback", "setup_keras_trainer", "KerasModel"]
