"""trainstack.distributed: training over several processes and machines."""
# multi-worker (TensorFlow's engines): cluster, multiworker, ps_trainer, launch
from .cluster import ClusterSpec, ClusterSpecError, free_ports, local_cluster
from .multiworker import BroadcastFromChief, DistributedTrainerReplicated, make_strategy
from .ps_trainer import (DistributedReplicatedTrainer, DistributedTrainerParameterServer, run_server,
                         serve_unless_chief)
# Horovod: horovod (imports Horovod only when a HorovodTrainer is made), sharding
from .horovod import BroadcastVariables, HorovodShutdownError, HorovodTrainer, import_horovod
from .sharding import ShardedDataFlow, shard_dataflow

__all__ = [
    # multi-worker (TensorFlow's engines)
    "ClusterSpec", "ClusterSpecError", "free_ports", "local_cluster",
    "DistributedTrainerReplicated", "BroadcastFromChief", "make_strategy",
    "DistributedTrainerParameterServer", "DistributedReplicatedTrainer", "run_server",
    "serve_unless_chief",
    # Horovod
    "HorovodTrainer", "BroadcastVariables", "HorovodShutdownError", "import_horovod", "ShardedDataFlow",
    "shard_dataflow",
]
