"""Where the cluster comes from (TF_CONFIG, a Slurm job step, one local process) and the
Kubernetes / Kubeflow TFJob forms of TF_CONFIG, at the unit level (no training; the runs are in
test_cluster_runs.py)."""
from __future__ import annotations

import json

import pytest
import tensorflow as tf

from trainstack.distributed import (
    ClusterSpec,
    ClusterSpecError,
    DistributedTrainerParameterServer,
    DistributedTrainerReplicated,
    cluster_from_environment,
    cluster_from_slurm,
    run_evaluator,
    serve_unless_chief,
)
from trainstack.distributed.slurm import expand_hostlist, expand_tasks_per_node


# -- Slurm's compact lists ------------------------------------------------------------------------
@pytest.mark.parametrize("hostlist, hosts", [
    ("localhost", ["localhost"]),
    ("node[01-03,07]", ["node01", "node02", "node03", "node07"]),
    ("n[9-10],gpu5", ["n9", "n10", "gpu5"]),
    ("node[08-10]", ["node08", "node09", "node10"]),
    ("a,b, c", ["a", "b", "c"]),
    ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),
    ("gpu[3]", ["gpu3"]),
])
def test_hostlists_expand_in_slurms_order(hostlist, hosts) -> None:
    assert expand_hostlist(hostlist) == hosts


@pytest.mark.parametrize("hostlist, message", [
    ("", "empty Slurm host list"), ("node[1-", "unbalanced"), ("node]1[", "unbalanced"),
    ("node[3-1]", "goes down"), ("node[a-b]", "not a number or a range"), ("a,,b", "empty host name"),
])
def test_malformed_hostlists_are_named(hostlist, message) -> None:
    with pytest.raises(ClusterSpecError, match=message):
        expand_hostlist(hostlist)


def test_tasks_per_node() -> None:
    assert expand_tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    assert expand_tasks_per_node("4") == [4]
    for bad in ("x", "0", "2(x)", "2,"):
        with pytest.raises(ClusterSpecError, match="not a Slurm tasks-per-node list"):
            expand_tasks_per_node(bad)


# -- the cluster of a Slurm job step ----------------------------------------------------------------
def _step(procid: int, nodelist: str = "node[01-03,07]", tasks_per_node: str = "2(x3),1",
          num_tasks: int = 7, **extra: str) -> dict[str, str]:
    return {"SLURM_JOB_ID": "1234", "SLURM_STEP_ID": "0", "SLURM_PROCID": str(procid),
            "SLURM_STEP_NUM_TASKS": str(num_tasks), "SLURM_NTASKS": str(num_tasks),
            "SLURM_STEP_NODELIST": nodelist, "SLURM_JOB_NODELIST": nodelist,
            "SLURM_STEP_TASKS_PER_NODE": tasks_per_node, "SLURM_TASKS_PER_NODE": tasks_per_node,
            "TRAINSTACK_PORT_BASE": "3000", **extra}


def test_slurm_ranks_follow_the_block_distribution() -> None:
    spec = cluster_from_environment(_step(5, SLURM_LOCALID="1", SLURMD_NODENAME="node03"))
    assert spec.cluster == {"worker": ("node01:3000", "node01:3001", "node02:3000", "node02:3001",
                                       "node03:3000", "node03:3001", "node07:3000")}
    assert (spec.task_type, spec.task_index, spec.rank, spec.num_workers) == ("worker", 5, 5, 7)
    assert spec.task_address == "node03:3001" and not spec.is_chief
    assert spec.source == "Slurm (SLURM_PROCID=5 of SLURM_STEP_NUM_TASKS=7)"
    assert cluster_from_environment(_step(0)).is_chief


def test_slurm_agrees_with_tensorflows_resolver_where_that_one_is_right() -> None:
    env = _step(3, "node[08-09]", "2(x2)", 4)
    ours = cluster_from_slurm(env)
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        theirs = tf.distribute.cluster_resolver.SlurmClusterResolver(
            port_base=3000, gpus_per_node=2, gpus_per_task=1, auto_set_gpu=False)
        assert theirs.cluster_spec().as_dict() == ours.as_dict()
        assert theirs.get_task_info() == (ours.task_type, ours.task_index)


def test_slurm_node_names_are_not_sorted_as_strings() -> None:
    # TensorFlow's SlurmClusterResolver sorts the hosts as strings: rank 0 would get node10's address
    spec = cluster_from_slurm(_step(0, "node[9-10]", "1(x2)", 2))
    assert spec.task_address == "node9:3000" and spec.cluster["worker"][1] == "node10:3000"


def test_slurm_roles_and_default_port_base() -> None:
    env = _step(1, "n[1-2]", "2(x2)", 4, TRAINSTACK_SLURM_ROLES="chief:1,ps:1")
    env.pop("TRAINSTACK_PORT_BASE")
    spec = cluster_from_slurm(env)
    base = 12000 + 1234 % 600 * 32
    assert spec.as_dict() == {"chief": [f"n1:{base}"], "ps": [f"n1:{base + 1}"],
                              "worker": [f"n2:{base}", f"n2:{base + 1}"]}
    assert (spec.task_type, spec.task_index) == ("ps", 0)
    worker = cluster_from_slurm({**env, "SLURM_PROCID": "3"})
    assert (worker.task_type, worker.task_index, worker.rank) == ("worker", 1, 2)


@pytest.mark.parametrize("env, message", [
    ({"SLURM_STEP_NODELIST": "n1", "SLURM_PROCID": "0"}, r"incomplete Slurm job step environment: .*"
     r"\['SLURM_STEP_NUM_TASKS', 'SLURM_STEP_TASKS_PER_NODE'\] are not"),
    (_step(0, "n[1-2]", "1", 1), "names 2 node\\(s\\) but SLURM_STEP_TASKS_PER_NODE='1' gives 1"),
    (_step(0, "n[1-2]", "2(x2)", 3), "adds up to 4 tasks but SLURM_STEP_NUM_TASKS=3"),
    (_step(7), "SLURM_PROCID=7 is out of range"),
    (_step(0, "n1,n1", "1(x2)", 2), "names a node twice"),
    (_step(-1), "SLURM_PROCID='-1' is not an integer"),
    (_step(1, "n[1-2]", "2(x2)", 4, SLURM_LOCALID="0", SLURM_DISTRIBUTION="cyclic"),
     "not where a block distribution .* SLURM_LOCALID=1.*'cyclic'.*--distribution=block"),
    (_step(2, "n[1-2]", "2(x2)", 4, SLURMD_NODENAME="n1"), "expected SLURMD_NODENAME='n2'"),
    (_step(0, "n1", "2", 2, TRAINSTACK_SLURM_ROLES="boss:1"), "'boss:1' is not 'type:count'"),
    (_step(0, "n1", "2", 2, TRAINSTACK_SLURM_ROLES="chief:1,ps:1"), "leaves no worker"),
    (_step(0, "n1", "2", 2, TRAINSTACK_PORT_BASE="70000"), "port base must be a port number"),
    ({"SLURM_JOB_ID": "9", "SLURM_NTASKS": "4", "SLURM_PROCID": "0", "SLURM_JOB_NODELIST": "n[1-4]"},
     "Slurm job 9 of SLURM_NTASKS=4 tasks but is not a task of a job step.*srun python train.py"),
    ({**_step(0, "n1", "2", 2), "TF_CONFIG": json.dumps({"cluster": {"worker": ["a:1"]},
                                                          "task": {"type": "worker", "index": 0}})},
     "ambiguous cluster: TF_CONFIG names 1 task\\(s\\) but .* SLURM_STEP_NUM_TASKS=2"),
])
def test_incomplete_or_inconsistent_environments_name_the_variables(env, message) -> None:
    with pytest.raises(ClusterSpecError, match=message):
        cluster_from_environment(env)


# -- the decision: TF_CONFIG, else Slurm, else one local process --------------------------------------
def test_tf_config_wins_and_no_cluster_is_one_local_worker() -> None:
    tf_config = ClusterSpec({"worker": ["a:1", "b:1"]}, "worker", 1).to_tf_config()
    spec = cluster_from_environment({"TF_CONFIG": tf_config, **_step(0, "n1", "2", 2)})
    assert spec.task_address == "b:1" and spec.source == "TF_CONFIG"
    # srun -n 1 around the local launcher: its children have TF_CONFIG and a 1-task step
    assert cluster_from_environment({"TF_CONFIG": tf_config, **_step(0, "n1", "1", 1)}).task_index == 1
    local = cluster_from_environment({})
    assert local.num_workers == 1 and local.is_chief and local.source.startswith("local")
    # the batch script of a one-task job, or an salloc shell: one local process too
    assert cluster_from_environment({"SLURM_JOB_ID": "9", "SLURM_NTASKS": "1"}).num_workers == 1
    with pytest.raises(ClusterSpecError, match="no cluster in the environment: TF_CONFIG is not set"):
        cluster_from_environment({}, local=False)


def test_the_trainers_resolve_through_the_environment(monkeypatch) -> None:
    for name in ("TF_CONFIG", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE",
                 "SLURM_JOB_ID", "SLURM_NTASKS"):
        monkeypatch.delenv(name, raising=False)
    assert ClusterSpec.resolve().source.startswith("local")
    with pytest.raises(ClusterSpecError, match="no cluster in the environment"):
        DistributedTrainerParameterServer()
    with pytest.raises(ClusterSpecError, match="no cluster in the environment"):
        serve_unless_chief()  # would otherwise serve forever as a local "worker"
    for k, v in _step(2, "n[1-2]", "2(x2)", 4, TRAINSTACK_SLURM_ROLES="chief:1,ps:1").items():
        monkeypatch.setenv(k, v)
    assert ClusterSpec.resolve() == ClusterSpec({"chief": ["n1:3000"], "ps": ["n1:3001"],
                                                 "worker": ["n2:3000", "n2:3001"]}, "worker", 0)


# -- Kubernetes: the TF_CONFIG of a Kubeflow TFJob or of a plain Job --------------------------------------
TFJOB = {"chief": ["job-chief-0.ns.svc:2222"], "ps": [],
         "worker": ["job-worker-0.ns.svc:2222", "job-worker-1.ns.svc:2222"]}


def _tf_config(cluster: dict, task_type: str, index: int) -> str:
    return json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index},
                       "environment": "cloud"})  # what the TFJob operator adds


def test_tfjob_chief_and_workers() -> None:
    chief = ClusterSpec.from_tf_config(_tf_config(TFJOB, "chief", 0))
    assert "ps" not in chief.cluster  # "Replicas: 0" of a type gives an empty list: dropped
    assert chief.is_chief and chief.rank == 0 and chief.num_workers == 3
    worker = ClusterSpec.from_tf_config(_tf_config(TFJOB, "worker", 1))
    assert not worker.is_chief and worker.rank == 2  # the chief computes steps too: rank 0


def test_a_job_without_chief_makes_worker_0_the_chief() -> None:
    cluster = {"worker": ["train-0.train:2222", "train-1.train:2222"]}
    assert ClusterSpec.from_tf_config(_tf_config(cluster, "worker", 0)).is_chief
    other = ClusterSpec.from_tf_config(_tf_config(cluster, "worker", 1))
    assert not other.is_chief and other.rank == 1


def test_the_evaluator_task_outside_or_inside_the_cluster() -> None:
    outside = ClusterSpec.from_tf_config(_tf_config(TFJOB, "evaluator", 0))  # TFJob's form
    assert outside.is_evaluator and not outside.is_chief
    with pytest.raises(ClusterSpecError, match="evaluator0 is outside the cluster"):
        outside.task_address
    with pytest.raises(ClusterSpecError, match="evaluator0 computes no steps"):
        outside.rank
    inside = ClusterSpec({**TFJOB, "ps": ["p:1"], "evaluator": ["e:1"]}, "worker", 0)
    resolver = inside.cluster_resolver()
    assert "evaluator" not in resolver.cluster_spec().as_dict()  # not part of the training cluster
    assert inside.num_workers == 3


def test_every_trainer_refuses_the_evaluator_task(monkeypatch) -> None:
    monkeypatch.setenv("TF_CONFIG", _tf_config(TFJOB, "evaluator", 0))
    for make in (DistributedTrainerReplicated, DistributedTrainerParameterServer, serve_unless_chief):
        with pytest.raises(ClusterSpecError, match=r"cannot run on evaluator0 \(from TF_CONFIG\).*"
                                                   r"run_evaluator\(evaluate_fn, logdir\).*InferenceRunner"):
            make()


def test_run_evaluator_evaluates_each_new_checkpoint_until_the_last_step(tmp_path) -> None:
    from trainstack.callbacks.saver import _loop_state_module  # noqa: PLC0415 - ModelSaver's layout

    module = _loop_state_module({"global_step": 10})
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(loop_state=module), str(tmp_path), 5,
                                         checkpoint_name="model")
    manager.save(checkpoint_number=10)
    seen = []

    def evaluate(path: str) -> None:
        seen.append(path)
        if path.endswith("model-10"):  # the chief writes the next one meanwhile
            module.global_step.assign(20)
            manager.save(checkpoint_number=20)

    done = run_evaluator(evaluate, tmp_path, last_step=20, timeout=30, poll_seconds=0.05)
    assert [p.rsplit("-", 1)[1] for p in done] == ["10", "20"] and done == seen
    # no last_step: it stops when no new checkpoint came for `timeout` seconds
    assert run_evaluator(seen.append, tmp_path, timeout=0.2, poll_seconds=0.05) == [done[-1]]
    with pytest.raises(TypeError, match="must be a function of a checkpoint path"):
        run_evaluator("evaluate", tmp_path)
