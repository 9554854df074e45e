"""Cluster specs: which tasks a distributed run has and which one this process is.

TensorFlow's multi-worker engines describe a run with ``TF_CONFIG``, a JSON
object set in each process's environment::

    {"cluster": {"worker": ["host1:2222", "host2:2222"], "ps": ["host3:2222"]},
     "task": {"type": "worker", "index": 0}}

:class:`ClusterSpec` is that object, checked: :meth:`ClusterSpec.from_tf_config`
reads it from the environment, :meth:`ClusterSpec.from_args` builds it from
arguments (``cluster={"worker": [...]}, task_type, task_index``), and
:meth:`ClusterSpec.to_tf_config` writes it back (the launcher sets one per
process). :func:`free_ports` finds free localhost ports for a local run.

Where a trainer finds its cluster when it is given none (``ClusterSpec.resolve()``):
:func:`trainstack.distributed.environment.cluster_from_environment` decides
(TF_CONFIG, else a Slurm job step, else one local process).

Kubeflow's TFJob writes TF_CONFIG with the ``evaluator`` task outside the
cluster ("the evaluator is not part of the training cluster"): such a spec is
accepted, and :meth:`ClusterSpec.cluster_resolver` leaves evaluators out.
"""
from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trainstack.loop.checks import check_int

__all__ = ["ClusterSpec", "ClusterSpecError", "free_ports", "local_cluster", "TF_CONFIG"]

#: the environment variable TensorFlow reads the cluster spec from
TF_CONFIG = "TF_CONFIG"
#: the task types the trainers understand
TASK_TYPES = ("chief", "worker", "ps", "evaluator")


class ClusterSpecError(ValueError):
    """A cluster spec (TF_CONFIG or arguments) is malformed."""


@dataclass(frozen=True)
class ClusterSpec:
    """The tasks of a distributed run and this process's task.

    ``cluster``: ``{task type: ["host:port", ...]}``; ``task_type`` and
    ``task_index`` name this process's entry in it; an ``evaluator`` task may be outside the
    cluster (as Kubeflow's TFJob writes it). ``source``: where the spec came from (for messages).
    """

    cluster: Mapping[str, Sequence[str]]  # given as lists or tuples; held as tuples (__post_init__)
    task_type: str
    task_index: int
    source: str = field(default="arguments", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "cluster", _check_cluster(self.cluster))
        if self.task_type == "evaluator" and "evaluator" not in self.cluster:
            object.__setattr__(self, "task_index", check_int("ClusterSpec", "task_index", self.task_index,
                                                             minimum=0, error=ClusterSpecError))
            return
        if self.task_type not in self.cluster:
            raise ClusterSpecError(f"task type {self.task_type!r} is not in the cluster, which has "
                                   f"{sorted(self.cluster)}")
        object.__setattr__(self, "task_index",
                           check_int("ClusterSpec", "task_index", self.task_index, error=ClusterSpecError))
        count = len(self.cluster[self.task_type])
        if not 0 <= self.task_index < count:
            raise ClusterSpecError(f"task index {self.task_index} is out of range: the cluster has "
                                   f"{count} {self.task_type!r} task(s)")

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def from_args(cls, cluster: Mapping[str, Sequence[str]], task_type: str,
                  task_index: int) -> ClusterSpec:
        """The spec from arguments (``cluster={"worker": [...], "ps": [...]}``)."""
        return cls(cluster, task_type, task_index)

    @classmethod
    def from_tf_config(cls, value: str | None = None) -> ClusterSpec:
        """The spec in ``value`` (a JSON string), or in the ``TF_CONFIG`` environment variable."""
        source = "TF_CONFIG" if value is None else "the TF_CONFIG value given"
        if value is None:
            value = os.environ.get(TF_CONFIG)
            if not value:
                raise ClusterSpecError("TF_CONFIG is not set: set it to a JSON object like "
                                       '{"cluster": {"worker": ["localhost:2222", "localhost:2223"]}, '
                                       '"task": {"type": "worker", "index": 0}}, or start the workers '
                                       "with python -m trainstack.distributed.launch")
        try:
            config = json.loads(value)
        except json.JSONDecodeError as e:
            raise ClusterSpecError(f"{source} is not valid JSON ({e}): {value!r:.200}") from e
        if not isinstance(config, dict) or "cluster" not in config or "task" not in config:
            raise ClusterSpecError(f'{source} must be a JSON object with "cluster" and "task" keys, '
                                   f"got {value!r:.200}")
        task = config["task"]
        if not isinstance(task, dict) or "type" not in task or "index" not in task:
            raise ClusterSpecError(f'{source}: "task" must be {{"type": ..., "index": ...}}, got {task!r}')
        cluster = config["cluster"]
        if isinstance(cluster, dict):  # a TFJob with "Replicas: 0" of a type writes an empty list
            cluster = {k: v for k, v in cluster.items() if not (isinstance(v, list) and not v)}
        return cls(cluster, task["type"], task["index"], source="TF_CONFIG")

    @classmethod
    def resolve(cls, cluster: ClusterSpec | Mapping[str, Any] | None = None,
                task_type: str | None = None, task_index: int | None = None, *,
                local: bool = True) -> ClusterSpec:
        """The spec a trainer's arguments name: a ClusterSpec, a cluster dict with
        ``task_type``/``task_index``, or None for the environment's (TF_CONFIG, else a Slurm
        job step, else, with ``local``, one local worker: see ``cluster_from_environment``)."""
        if isinstance(cluster, ClusterSpec):
            return cluster
        if cluster is None:
            if task_type is not None or task_index is not None:
                raise ClusterSpecError("task_type/task_index were given without cluster=...; give "
                                       "the cluster dict too, or neither (to read the environment: "
                                       "TF_CONFIG, Slurm)")
            from .environment import cluster_from_environment  # noqa: PLC0415 - it imports this module

            return cluster_from_environment(local=local)
        if task_type is None or task_index is None:
            raise ClusterSpecError("cluster=... needs task_type and task_index (which task this "
                                   "process is)")
        return cls.from_args(cluster, task_type, task_index)

    # -- queries ---------------------------------------------------------------------------------
    @property
    def num_workers(self) -> int:
        """The number of tasks that compute steps (workers, plus the chief for MultiWorkerMirrored)."""
        return len(self.cluster.get("worker", ())) + len(self.cluster.get("chief", ()))

    @property
    def is_evaluator(self) -> bool:
        """Whether this task is an evaluator, which trains nothing (see ``run_evaluator``)."""
        return self.task_type == "evaluator"

    @property
    def rank(self) -> int:
        """This task's position among the tasks that compute steps, the chief first (TensorFlow's
        ``id_in_cluster``): the shard of the data it reads, of :attr:`num_workers`."""
        if self.task_type == "chief":
            return 0
        if self.task_type != "worker":
            raise ClusterSpecError(f"{self.task_name} computes no steps: only chief and worker tasks "
                                   "have a rank")
        return self.task_index + int("chief" in self.cluster)

    @property
    def is_chief(self) -> bool:
        """Whether this task is the chief: the ``chief`` task, or worker 0 when there is none."""
        if "chief" in self.cluster:
            return self.task_type == "chief"
        return self.task_type == "worker" and self.task_index == 0

    @property
    def task_address(self) -> str:
        if self.task_type not in self.cluster:
            raise ClusterSpecError(f"{self.task_name} is outside the cluster: it has no address")
        return self.cluster[self.task_type][self.task_index]

    @property
    def task_name(self) -> str:
        return f"{self.task_type}{self.task_index}"

    def as_dict(self) -> dict[str, list[str]]:
        """The cluster as plain lists (what ``tf.train.ClusterSpec`` takes)."""
        return {k: list(v) for k, v in self.cluster.items()}

    def to_tf_config(self) -> str:
        """The ``TF_CONFIG`` JSON for this task."""
        return json.dumps({"cluster": self.as_dict(),
                           "task": {"type": self.task_type, "index": self.task_index}})

    def cluster_resolver(self, rpc_layer: str = "grpc") -> Any:
        """A ``tf.distribute.cluster_resolver.SimpleClusterResolver`` for this task, without the
        evaluators (they are not part of the training cluster)."""
        import tensorflow as tf  # noqa: PLC0415 - reading specs needs no TensorFlow

        training = {k: v for k, v in self.as_dict().items() if k != "evaluator"}
        return tf.distribute.cluster_resolver.SimpleClusterResolver(
            tf.train.ClusterSpec(training), task_type=self.task_type, task_id=self.task_index,
            rpc_layer=rpc_layer)

    def with_task(self, task_type: str, task_index: int) -> ClusterSpec:
        """The same cluster, seen from another task."""
        return ClusterSpec(self.cluster, task_type, task_index, source=self.source)


def _check_cluster(cluster: Any) -> dict[str, tuple[str, ...]]:
    if not isinstance(cluster, Mapping) or not cluster:
        raise ClusterSpecError(f'the cluster must be a non-empty dict like {{"worker": ["host:port", ...]}}, '
                               f"got {cluster!r:.200}")
    checked: dict[str, tuple[str, ...]] = {}
    seen: dict[str, str] = {}
    for task_type, addresses in cluster.items():
        if task_type not in TASK_TYPES:
            raise ClusterSpecError(f"unknown task type {task_type!r} in the cluster; expected some of "
                                   f"{list(TASK_TYPES)}")
        if isinstance(addresses, str) or not isinstance(addresses, Sequence) or not addresses:
            raise ClusterSpecError(f"cluster[{task_type!r}] must be a non-empty list of 'host:port' "
                                   f"strings, got {addresses!r:.200}")
        for address in addresses:
            host, sep, port = address.rpartition(":") if isinstance(address, str) else ("", "", "")
            if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ClusterSpecError(f"cluster[{task_type!r}] has {address!r}, which is not a "
                                       "'host:port' address (port 1-65535)")
            if address in seen:
                raise ClusterSpecError(f"address {address!r} is used by both {seen[address]!r} and "
                                       f"{task_type!r} tasks; each task needs its own port")
            seen[address] = task_type
        checked[task_type] = tuple(addresses)
    if "chief" in checked and len(checked["chief"]) != 1:
        raise ClusterSpecError(f"a cluster has at most one chief, got {list(checked['chief'])}")
    return checked


def free_ports(n: int, host: str = "localhost") -> list[int]:
    """``n`` distinct TCP ports free on ``host`` now (bound, then released, by the OS)."""
    n = check_int("free_ports", "n", n, minimum=0)
    sockets, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, 0))
            sockets.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in sockets:
            s.close()
    return ports


def local_cluster(num_workers: int, num_ps: int = 0, chief: bool = False,
                  host: str = "localhost") -> dict[str, list[str]]:
    """A cluster dict of local tasks on free ports: ``num_workers`` workers, ``num_ps``
    parameter servers and, with ``chief``, a chief."""
    num_workers = check_int("local_cluster", "num_workers", num_workers, minimum=1)
    num_ps = check_int("local_cluster", "num_ps", num_ps, minimum=0)
    ports = iter(free_ports(num_workers + num_ps + int(chief), host))
    cluster: dict[str, list[str]] = {}
    if chief:
        cluster["chief"] = [f"{host}:{next(ports)}"]
    cluster["worker"] = [f"{host}:{next(ports)}" for _ in range(num_workers)]
    if num_ps:
        cluster["ps"] = [f"{host}:{next(ports)}" for _ in range(num_ps)]
    return cluster
