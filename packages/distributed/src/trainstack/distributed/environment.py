"""Where a run's cluster comes from when the script names none: the one place that decides.

:func:`cluster_from_environment` (what ``ClusterSpec.resolve()``, and so every
trainer built without a cluster, calls), in this order:

1. ``TF_CONFIG`` set: the cluster it describes (the local launcher, Kubernetes /
   Kubeflow's TFJob, or your own). Inside a Slurm job step of several tasks it
   must name as many tasks as the step has: a TF_CONFIG exported to every task
   of an ``srun`` would make each of them the same task.
2. A task of a Slurm job step (``srun`` set ``SLURM_STEP_NUM_TASKS``,
   ``SLURM_STEP_NODELIST``, ``SLURM_STEP_TASKS_PER_NODE``): the step's cluster
   (:func:`~trainstack.distributed.slurm.cluster_from_slurm`).
3. Neither: one local worker (a cluster of this process alone), unless the
   caller needs a real cluster (``local=False``: the parameter-server trainer).
   The batch script of a Slurm job of several tasks (``SLURM_NTASKS`` > 1, no
   step variables) is an error: its training belongs in an ``srun`` step.

An incomplete or inconsistent environment is a ``ClusterSpecError`` naming the
variables.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

from .cluster import TF_CONFIG, ClusterSpec, ClusterSpecError, free_ports
from .slurm import STEP_VARIABLES, cluster_from_slurm, in_slurm_step

__all__ = ["cluster_from_environment"]


def cluster_from_environment(environ: Mapping[str, str] | None = None, *,
                             local: bool = True) -> ClusterSpec:
    """This process's ClusterSpec from ``environ`` (default ``os.environ``); see the module
    docstring. ``local=False``: no cluster in the environment is an error instead of one
    local worker."""
    environ = os.environ if environ is None else environ
    if environ.get(TF_CONFIG):
        spec = ClusterSpec.from_tf_config(environ[TF_CONFIG])
        _check_against_slurm(spec, environ)
        return spec
    if in_slurm_step(environ):
        return cluster_from_slurm(environ)
    tasks = environ.get("SLURM_NTASKS") or environ.get("SLURM_NPROCS")
    if environ.get("SLURM_JOB_ID") and tasks and tasks.strip().isdigit() and int(tasks) > 1:
        raise ClusterSpecError(
            f"this process runs in Slurm job {environ['SLURM_JOB_ID']} of SLURM_NTASKS={tasks} tasks "
            f"but is not a task of a job step (none of {list(STEP_VARIABLES)} is set): it is the "
            "batch script itself. Start the training with srun (srun python train.py), one task "
            "per worker, or set TF_CONFIG")
    if not local:
        raise ClusterSpecError(
            "no cluster in the environment: TF_CONFIG is not set and this is not a task of a Slurm "
            f"job step (none of {list(STEP_VARIABLES)} is set). Set TF_CONFIG (e.g. "
            '{"cluster": {"chief": [...], "worker": [...], "ps": [...]}, "task": {"type": "chief", '
            '"index": 0}}), start the tasks with python -m trainstack.distributed.launch, or with '
            "srun and TRAINSTACK_SLURM_ROLES=chief:1,ps:1")
    return ClusterSpec({"worker": [f"localhost:{free_ports(1)[0]}"]}, "worker", 0,
                       source="local (no TF_CONFIG, no Slurm job step): one worker")


def _check_against_slurm(spec: ClusterSpec, environ: Mapping[str, str]) -> None:
    """TF_CONFIG inside a Slurm step of several tasks must describe as many tasks."""
    if not in_slurm_step(environ):
        return
    step_tasks = environ.get("SLURM_STEP_NUM_TASKS", "")
    if not step_tasks.strip().isdigit() or int(step_tasks) <= 1:
        return
    named = sum(len(v) for v in spec.cluster.values()) + int(spec.task_type not in spec.cluster)
    if named != int(step_tasks):
        raise ClusterSpecError(
            f"ambiguous cluster: TF_CONFIG names {named} task(s) but this process is task "
            f"SLURM_PROCID={environ.get('SLURM_PROCID', '?')} of a Slurm job step of "
            f"SLURM_STEP_NUM_TASKS={step_tasks}. Unset TF_CONFIG to take the cluster from Slurm, "
            "or start one task per step (srun -n 1) when TF_CONFIG is meant")
