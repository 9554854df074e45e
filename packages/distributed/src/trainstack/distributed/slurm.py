"""The cluster of a Slurm job step: which task this process is, read from Slurm's environment.

Under ``srun``, every task of the step gets ``SLURM_PROCID`` (its rank),
``SLURM_STEP_NUM_TASKS``, ``SLURM_STEP_NODELIST`` (``node[01-03,07]``) and
``SLURM_STEP_TASKS_PER_NODE`` (``2(x3),1``). :func:`cluster_from_slurm` turns
them into a :class:`~trainstack.distributed.ClusterSpec`: rank ``r`` runs on the
node that Slurm's default *block* distribution puts it on (the first node's
tasks first), at port ``port_base + its index on that node``; ranks are
``worker`` tasks unless ``TRAINSTACK_SLURM_ROLES`` (``chief:1,ps:2``) gives the
first ranks other roles, in that order.

Why not ``tf.distribute.cluster_resolver.SlurmClusterResolver`` (TF 2.21): it
counts GPUs with ``nvidia-smi`` (absent on CPU nodes: ``FileNotFoundError``) and
cannot give several tasks of a node zero GPUs (``range()`` with step 0); it
sorts host names as strings, so in ``node[9-10]`` rank 0 gets ``node10``'s
address; and it rewrites ``CUDA_VISIBLE_DEVICES``. The variables it reads are
the ones read here; its hostlist forms are a subset of :func:`expand_hostlist`'s.
Neither calls ``scontrol``.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import product

from .cluster import TASK_TYPES, ClusterSpec, ClusterSpecError

__all__ = ["SlurmStep", "cluster_from_slurm", "expand_hostlist", "expand_tasks_per_node",
           "in_slurm_step", "STEP_VARIABLES", "PORT_BASE_VARIABLE", "ROLES_VARIABLE"]

#: the variables srun sets for every task of a step; any of them marks this process as one
STEP_VARIABLES = ("SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE")
#: the first port of each node's tasks (task k of a node listens on base + k)
PORT_BASE_VARIABLE = "TRAINSTACK_PORT_BASE"
#: roles of the first ranks, e.g. "chief:1,ps:2" (the other ranks are workers)
ROLES_VARIABLE = "TRAINSTACK_SLURM_ROLES"
#: without TRAINSTACK_PORT_BASE: 12000 + (job id % 600) * 32, so jobs sharing a node differ
DEFAULT_PORT_BASE, PORTS_PER_JOB, JOB_SLOTS = 12000, 32, 600


def expand_hostlist(hostlist: str) -> list[str]:
    """Slurm's compact host list as names, in order: ``"node[01-03,07],gpu5"`` ->
    ``node01 node02 node03 node07 gpu5``; several bracket groups (``r[1-2]-n[1-2]``) expand
    in order, the last fastest; a range keeps the width of its first number (``[08-10]``)."""
    if not isinstance(hostlist, str) or not hostlist.strip():
        raise ClusterSpecError(f"an empty Slurm host list: {hostlist!r}")
    hosts: list[str] = []
    for item in _split_outside_brackets(hostlist.strip(), hostlist):
        pieces = re.split(r"(\[[^\[\]]*\])", item)  # text, [ranges], text, ...
        choices: list[list[str]] = []
        for piece in pieces:
            if piece.startswith("["):
                choices.append(_expand_ranges(piece[1:-1], hostlist))
            elif "[" in piece or "]" in piece:
                raise ClusterSpecError(f"unbalanced brackets in the Slurm host list {hostlist!r}")
            elif piece:
                choices.append([piece])
        hosts.extend("".join(parts) for parts in product(*choices))
    return hosts


def _split_outside_brackets(text: str, whole: str) -> list[str]:
    items, depth, current = [], 0, ""
    for c in text:
        depth += (c == "[") - (c == "]")
        if depth not in (0, 1):
            raise ClusterSpecError(f"unbalanced brackets in the Slurm host list {whole!r}")
        if c == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += c
    if depth:
        raise ClusterSpecError(f"unbalanced brackets in the Slurm host list {whole!r}")
    items.append(current)
    if any(not item.strip() for item in items):
        raise ClusterSpecError(f"an empty host name in the Slurm host list {whole!r}")
    return [item.strip() for item in items]


def _expand_ranges(ranges: str, whole: str) -> list[str]:
    out: list[str] = []
    for part in ranges.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:-(\d+))?\s*", part)
        if m is None:
            raise ClusterSpecError(f"{part!r} in the Slurm host list {whole!r} is not a number or "
                                   "a range like 01-03")
        low, high = m.group(1), m.group(2) or m.group(1)
        if int(high) < int(low):
            raise ClusterSpecError(f"the range {part!r} in the Slurm host list {whole!r} goes down")
        out.extend(str(i).zfill(len(low)) for i in range(int(low), int(high) + 1))
    return out


def expand_tasks_per_node(tasks_per_node: str) -> list[int]:
    """Slurm's tasks-per-node list as one count per node: ``"2(x3),1"`` -> ``[2, 2, 2, 1]``."""
    counts: list[int] = []
    for part in str(tasks_per_node).split(","):
        m = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", part)
        if m is None or int(m.group(1)) < 1:
            raise ClusterSpecError(f"{tasks_per_node!r} is not a Slurm tasks-per-node list like "
                                   "'2(x3),1' (count, optionally (xN) for N nodes)")
        counts.extend([int(m.group(1))] * int(m.group(2) or 1))
    return counts


def in_slurm_step(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process is a task of a Slurm job step (srun set any of STEP_VARIABLES)."""
    environ = os.environ if environ is None else environ
    return any(environ.get(name) for name in STEP_VARIABLES)


@dataclass(frozen=True)
class SlurmStep:
    """The step as Slurm describes it: this task's rank, and the nodes' names and task counts."""

    procid: int
    num_tasks: int
    nodes: tuple[str, ...]
    tasks_per_node: tuple[int, ...]
    job_id: int | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> SlurmStep:
        """The step of ``environ`` (default ``os.environ``); a ClusterSpecError names each variable
        that is missing or malformed, or inconsistent with the others."""
        environ = os.environ if environ is None else environ
        needed = ("SLURM_PROCID", *STEP_VARIABLES)
        missing = [name for name in needed if not environ.get(name)]
        if missing:
            present = [name for name in needed if environ.get(name)]
            raise ClusterSpecError(f"an incomplete Slurm job step environment: {present} are set but "
                                   f"{missing} are not (srun sets all of {list(needed)}); start the "
                                   "script with srun, or unset the SLURM_STEP_* variables and set "
                                   "TF_CONFIG")
        procid, num_tasks = _int(environ, "SLURM_PROCID", 0), _int(environ, "SLURM_STEP_NUM_TASKS", 1)
        nodes = expand_hostlist(environ["SLURM_STEP_NODELIST"])
        counts = expand_tasks_per_node(environ["SLURM_STEP_TASKS_PER_NODE"])
        if len(nodes) != len(counts):
            raise ClusterSpecError(f"SLURM_STEP_NODELIST={environ['SLURM_STEP_NODELIST']!r} names "
                                   f"{len(nodes)} node(s) but SLURM_STEP_TASKS_PER_NODE="
                                   f"{environ['SLURM_STEP_TASKS_PER_NODE']!r} gives {len(counts)}")
        if len(set(nodes)) != len(nodes):
            raise ClusterSpecError(f"SLURM_STEP_NODELIST={environ['SLURM_STEP_NODELIST']!r} names a "
                                   "node twice")
        if sum(counts) != num_tasks:
            raise ClusterSpecError(f"SLURM_STEP_TASKS_PER_NODE={environ['SLURM_STEP_TASKS_PER_NODE']!r} "
                                   f"adds up to {sum(counts)} tasks but SLURM_STEP_NUM_TASKS={num_tasks}")
        if procid >= num_tasks:
            raise ClusterSpecError(f"SLURM_PROCID={procid} is out of range for SLURM_STEP_NUM_TASKS="
                                   f"{num_tasks}")
        job_id = _int(environ, "SLURM_JOB_ID", 0) if environ.get("SLURM_JOB_ID") else None
        step = cls(procid, num_tasks, tuple(nodes), tuple(counts), job_id)
        step._check_own_placement(environ)
        return step

    def placement(self, rank: int) -> tuple[str, int]:
        """(node, index on that node) of ``rank`` under Slurm's block distribution."""
        first = 0
        for node, count in zip(self.nodes, self.tasks_per_node):
            if rank < first + count:
                return node, rank - first
            first += count
        raise ClusterSpecError(f"rank {rank} is beyond the step's {self.num_tasks} tasks")

    def _check_own_placement(self, environ: Mapping[str, str]) -> None:
        node, local = self.placement(self.procid)
        actual = {"SLURM_LOCALID": str(local), "SLURMD_NODENAME": node}
        wrong = {name: environ[name] for name, want in actual.items()
                 if environ.get(name) and environ[name] != want}
        if wrong:
            raise ClusterSpecError(
                f"task SLURM_PROCID={self.procid} is not where a block distribution of "
                f"SLURM_STEP_TASKS_PER_NODE over SLURM_STEP_NODELIST puts it (expected "
                f"SLURMD_NODENAME={node!r}, SLURM_LOCALID={local}; got "
                f"{', '.join(f'{k}={v!r}' for k, v in wrong.items())}; SLURM_DISTRIBUTION="
                f"{environ.get('SLURM_DISTRIBUTION', '(unset)')!r}): start the step with "
                "srun --distribution=block, or set TF_CONFIG yourself")


def cluster_from_slurm(environ: Mapping[str, str] | None = None, *, port_base: int | None = None,
                       roles: str | None = None) -> ClusterSpec:
    """The ClusterSpec of this Slurm task (see the module docstring).

    ``port_base``: default ``$TRAINSTACK_PORT_BASE``, else ``12000 + (SLURM_JOB_ID % 600) * 32``
    (12000 without a job id). ``roles``: default ``$TRAINSTACK_SLURM_ROLES``, e.g.
    ``"chief:1,ps:1"``: rank 0 is the chief, rank 1 the ps, the other ranks workers.
    """
    environ = os.environ if environ is None else environ
    step = SlurmStep.from_environ(environ)
    base = _port_base(environ, step, port_base)
    most = max(step.tasks_per_node)
    if base + most - 1 > 65535:
        raise ClusterSpecError(f"port base {base} leaves no port for {most} tasks on a node "
                               f"(set {PORT_BASE_VARIABLE} lower)")
    addresses = [f"{node}:{base + local}" for node, local in map(step.placement, range(step.num_tasks))]
    counts = _roles(environ.get(ROLES_VARIABLE, "") if roles is None else roles, step.num_tasks)
    cluster: dict[str, list[str]] = {}
    first = 0
    for task_type, count in counts:
        cluster[task_type] = addresses[first:first + count]
        if first <= step.procid < first + count:
            mine = (task_type, step.procid - first)
        first += count
    return ClusterSpec(cluster, *mine,
                       source=f"Slurm (SLURM_PROCID={step.procid} of SLURM_STEP_NUM_TASKS={step.num_tasks})")


def _port_base(environ: Mapping[str, str], step: SlurmStep, port_base: int | None) -> int:
    if port_base is None and environ.get(PORT_BASE_VARIABLE):
        port_base = _int(environ, PORT_BASE_VARIABLE, 1)
    if port_base is None:
        return DEFAULT_PORT_BASE + (step.job_id or 0) % JOB_SLOTS * PORTS_PER_JOB
    if not isinstance(port_base, int) or not 0 < port_base < 65536:
        raise ClusterSpecError(f"the port base must be a port number (1-65535), got {port_base!r}")
    return port_base


def _roles(spec: str, num_tasks: int) -> list[tuple[str, int]]:
    """[(task type, count)] in rank order; the ranks not given a role are workers (last)."""
    counts: list[tuple[str, int]] = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        m = re.fullmatch(r"(\w+):(\d+)", part)
        if m is None or m.group(1) not in TASK_TYPES or m.group(1) == "worker" or int(m.group(2)) < 1:
            raise ClusterSpecError(f"{ROLES_VARIABLE}={spec!r}: {part!r} is not 'type:count' with a "
                                   f"type among {[t for t in TASK_TYPES if t != 'worker']} and a "
                                   "count >= 1 (the other ranks are workers)")
        if m.group(1) in dict(counts):
            raise ClusterSpecError(f"{ROLES_VARIABLE}={spec!r} names {m.group(1)!r} twice")
        counts.append((m.group(1), int(m.group(2))))
    given = sum(c for _, c in counts)
    if given >= num_tasks:
        raise ClusterSpecError(f"{ROLES_VARIABLE}={spec!r} takes {given} of the step's {num_tasks} "
                               "tasks and leaves no worker; start more tasks (srun -n)")
    return [*counts, ("worker", num_tasks - given)]


def _int(environ: Mapping[str, str], name: str, minimum: int) -> int:
    value = environ[name]
    if not re.fullmatch(r"\s*\d+\s*", value) or int(value) < minimum:
        raise ClusterSpecError(f"{name}={value!r} is not an integer >= {minimum}")
    return int(value)
