"""tensorpack's distributed trainers: the distributed layer's, with :class:`~.trainers.TF1Trainer`'s
overrides of the core's hooks (towers built in the TF1 room, TF1 optimizers, the step variable)."""
from __future__ import annotations

from trainstack import distributed as core

from .trainers import TF1Trainer

__all__ = ["HorovodTrainer", "DistributedTrainerReplicated", "DistributedTrainerParameterServer"]


class HorovodTrainer(TF1Trainer, core.HorovodTrainer):
    """tensorpack's HorovodTrainer (see :mod:`.trainers`)."""

    records_graph_build = False


class DistributedTrainerReplicated(TF1Trainer, core.DistributedTrainerReplicated):
    """tensorpack's DistributedTrainerReplicated (see :mod:`.trainers`)."""

    records_graph_build = False


class DistributedTrainerParameterServer(TF1Trainer, core.DistributedTrainerParameterServer):
    """tensorpack's DistributedTrainerParameterServer (see :mod:`.trainers`)."""

    records_graph_build = False
