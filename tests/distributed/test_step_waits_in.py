"""What StepWatchdog's report says a distributed step waits in (Trainer.step_waits_in), for the
trainers whose runs need more than this process: Horovod without Horovod installed (a stand-in for
``horovod.tensorflow`` answering size()), and the parameter-server trainer without its cluster. The
multi-worker trainer's, in a real two-worker run: test_multiworker.py."""
from __future__ import annotations

from types import SimpleNamespace

from trainstack.distributed import DistributedTrainerParameterServer, HorovodTrainer
from trainstack.distributed.cluster import ClusterSpec


def horovod_trainer(size: int) -> HorovodTrainer:
    trainer = object.__new__(HorovodTrainer)  # __init__ would start Horovod
    trainer.hvd = SimpleNamespace(size=lambda: size)
    return trainer


def test_a_horovod_step_waits_in_the_gradients_allreduce_of_its_ranks():
    assert horovod_trainer(4).step_waits_in() == (
        "Horovod's allreduce in the step's gradient aggregation across its 4 ranks (and, with "
        "BatchNorm(sync_statistics='horovod'), the allreduce of the batch statistics)")
    assert horovod_trainer(1).step_waits_in() is None  # one rank waits for nobody


def test_a_parameter_server_step_waits_in_the_coordinator_and_the_servers():
    trainer = object.__new__(DistributedTrainerParameterServer)  # __init__ would connect to the cluster
    trainer.cluster_spec = ClusterSpec({"chief": ["h:1"], "worker": ["h:2", "h:3"], "ps": ["h:4"]}, "chief", 0)
    assert trainer.step_waits_in() == (
        "the ClusterCoordinator's wait for the step it scheduled on one of its 2 workers, whose variable "
        "reads and updates go to the 1 parameter server(s)")
