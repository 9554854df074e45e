"""trainstack.distributed: training over several processes and machines."""
# isort: off
from trainstack.callbacks import tf_startup as _tf_startup  # noqa: F401 - first: TensorFlow without its start-up lines
# isort: on
# multi-worker (TensorFlow's engines): cluster, multiworker, ps_trainer, launch
from .cluster import ClusterSpec, ClusterSpecError, free_ports, local_cluster

# elastic Horovod: elastic (the trainer and its committed state), elastic_input, elastic_callbacks
from .elastic import DEFAULT_COMMIT_EVERY, ElasticHorovodTrainer
from .elastic_callbacks import ChiefGate, ScaleLearningRateOnResize
from .elastic_input import ElasticFeedInput

# cluster schedulers: where the cluster comes from (TF_CONFIG, Slurm, local), the evaluator task
from .environment import cluster_from_environment
from .evaluator import run_evaluator

# Horovod: horovod (imports Horovod only when a HorovodTrainer is made), sharding
from .horovod import BroadcastVariables, HorovodShutdownError, HorovodTrainer, import_horovod
from .multiworker import BroadcastFromChief, DistributedTrainerReplicated, make_strategy
from .ps_trainer import DistributedReplicatedTrainer, DistributedTrainerParameterServer, run_server, serve_unless_chief
from .sharding import ShardedDataFlow, shard_dataflow
from .slurm import cluster_from_slurm

# Ray (the `ray` extra): trainstack.distributed.ray, loaded on first use of these names; it imports
# Ray itself only when train_on_ray runs
_RAY_NAMES = ("train_on_ray", "RayWorker", "RayCheckpointReporter")


def __getattr__(name: str):  # noqa: ANN202 - module __getattr__ (PEP 562)
    if name in _RAY_NAMES:
        from . import ray as _ray  # noqa: PLC0415

        return getattr(_ray, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    # multi-worker (TensorFlow's engines)
    "ClusterSpec", "ClusterSpecError", "free_ports", "local_cluster",
    "cluster_from_environment", "cluster_from_slurm", "run_evaluator",
    "DistributedTrainerReplicated", "BroadcastFromChief", "make_strategy",
    "DistributedTrainerParameterServer", "DistributedReplicatedTrainer", "run_server",
    "serve_unless_chief",
    # Horovod
    "HorovodTrainer", "BroadcastVariables", "HorovodShutdownError", "import_horovod", "ShardedDataFlow",
    "shard_dataflow",
    # elastic Horovod
    "ElasticHorovodTrainer", "DEFAULT_COMMIT_EVERY", "ElasticFeedInput", "ChiefGate", "ScaleLearningRateOnResize",
    # Ray (lazy)
    *_RAY_NAMES,
]
