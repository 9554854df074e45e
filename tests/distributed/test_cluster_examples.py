"""examples/cluster/: the Kubernetes manifests and the sbatch script, checked against the code
without a cluster: they parse (PyYAML, ``bash -n``), run the example script that exists with
arguments it accepts, set the variables trainstack reads, and describe a consistent cluster
(the TF_CONFIG a pod writes, read by ClusterSpec; the sbatch script run with a stand-in srun)."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from trainstack.distributed import ClusterSpec
from trainstack.distributed.cluster import TF_CONFIG
from trainstack.distributed.slurm import DEFAULT_PORT_BASE, JOB_SLOTS, PORT_BASE_VARIABLE, PORTS_PER_JOB, ROLES_VARIABLE

yaml = pytest.importorskip("yaml", reason="PyYAML parses the manifests (the distributed nox session has it)")

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "examples" / "cluster"
SCRIPT = CLUSTER / "train_digits.py"
SCRIPT_ARGS = set(re.findall(r'add_argument\("(--[\w-]+)"', SCRIPT.read_text()))
REQUIRED_ARGS = {"--logdir"}


def _check_command(argv: list[str], workdir: str = str(ROOT)) -> dict[str, str]:
    """``python <script> --flag value ...``: the script exists (relative to the repository, the
    image's working directory) and accepts every flag; returns {flag: value}."""
    assert argv[0] == "python", argv
    assert (Path(workdir) / argv[1]).resolve() == SCRIPT, argv
    flags = dict(zip(argv[2::2], argv[3::2]))
    assert set(flags) <= SCRIPT_ARGS and REQUIRED_ARGS <= set(flags), (flags, SCRIPT_ARGS)
    return flags


def _documents(name: str) -> dict[str, dict]:
    with open(CLUSTER / name) as f:
        return {doc["kind"]: doc for doc in yaml.safe_load_all(f)}


def _volume_paths(pod: dict) -> dict[str, str]:
    """{mount path: claim name} of the pod's (first) container."""
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]}
    return {m["mountPath"]: claims[m["name"]] for m in pod["containers"][0]["volumeMounts"]}


def _shared_logdir(flags: dict[str, str], pod: dict, claim: str) -> None:
    mounts = _volume_paths(pod)
    assert any(flags["--logdir"].startswith(path + "/") and mounts[path] == claim for path in mounts), \
        f"--logdir {flags['--logdir']} is not on the shared volume {claim} ({mounts})"


def test_tfjob_manifest() -> None:
    docs = _documents("tfjob.yaml")
    claim = docs["PersistentVolumeClaim"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]  # every pod mounts it
    job = docs["TFJob"]
    assert job["apiVersion"] == "kubeflow.org/v1"
    assert job["spec"]["runPolicy"]["backoffLimit"] >= 1
    replicas = job["spec"]["tfReplicaSpecs"]
    assert set(replicas) == {"Chief", "Worker", "Evaluator"} and replicas["Chief"]["replicas"] == 1
    for kind, spec in replicas.items():
        assert spec["restartPolicy"] == "OnFailure", kind  # a failed pod restarts into resume
        pod = spec["template"]["spec"]
        container = pod["containers"][0]
        assert container["name"] == "tensorflow"  # the operator's required name
        assert {"name": "tfjob-port", "containerPort": 2222} in container["ports"]
        flags = _check_command(container["command"], container["workingDir"].replace(
            "/workspace/trainstack", str(ROOT)))
        _shared_logdir(flags, pod, claim["metadata"]["name"])
    # the operator's TF_CONFIG for these replicas, as ClusterSpec reads it in each pod
    hosts = {kind.lower(): [f"digits-{kind.lower()}-{i}.default.svc:2222" for i in range(spec["replicas"])]
             for kind, spec in replicas.items() if kind != "Evaluator"}
    chief = ClusterSpec.from_tf_config(json.dumps({"cluster": hosts, "task": {"type": "chief", "index": 0}}))
    assert chief.is_chief and chief.num_workers == 3
    evaluator = ClusterSpec.from_tf_config(json.dumps({"cluster": hosts,
                                                       "task": {"type": "evaluator", "index": 0}}))
    assert evaluator.is_evaluator  # outside the cluster: the script runs run_evaluator there
    assert "spec.is_evaluator" in SCRIPT.read_text() and "run_evaluator(" in SCRIPT.read_text()


def test_plain_job_manifest_writes_a_tf_config_per_index(tmp_path) -> None:
    docs = _documents("job.yaml")
    service, job = docs["Service"], docs["Job"]
    name = job["metadata"]["name"]
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["selector"] == {"job-name": name}
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"]
    assert spec["backoffLimit"] >= 1
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "OnFailure" and pod["subdomain"] == service["metadata"]["name"]
    container = pod["containers"][0]
    port = container["ports"][0]["containerPort"]
    assert [p["port"] for p in service["spec"]["ports"]] == [port]
    assert docs["PersistentVolumeClaim"]["spec"]["accessModes"] == ["ReadWriteMany"]
    # run the pod's command with a stand-in python that records its TF_CONFIG and arguments
    (tmp_path / "python").write_text('#!/bin/sh\nprintf "%s\\n" "$TF_CONFIG" "$@" > "$RECORD"\n')
    (tmp_path / "python").chmod(0o755)
    for index in range(spec["completions"]):
        record = tmp_path / f"record{index}"
        env = {"PATH": f"{tmp_path}:{os.environ['PATH']}", "JOB_COMPLETION_INDEX": str(index),
               "RECORD": str(record)}
        subprocess.run([*container["command"], *container["args"]], env=env, check=True, timeout=30,
                       cwd=ROOT)
        tf_config, *argv = record.read_text().splitlines()
        flags = _check_command(["python", *argv])
        _shared_logdir(flags, pod, docs["PersistentVolumeClaim"]["metadata"]["name"])
        cluster = ClusterSpec.from_tf_config(tf_config)
        assert cluster.cluster == {"worker": tuple(f"{name}-{i}.{service['metadata']['name']}:{port}"
                                                   for i in range(spec["completions"]))}
        assert (cluster.task_type, cluster.task_index, cluster.is_chief) == ("worker", index, index == 0)
    assert f"export {TF_CONFIG}=" in container["args"][0]


SBATCH = CLUSTER / "train_digits.sbatch"


def test_sbatch_script_parses_and_sets_what_the_code_reads() -> None:
    subprocess.run(["bash", "-n", str(SBATCH)], check=True, timeout=30)
    text = SBATCH.read_text()
    directives = re.findall(r"^#SBATCH (\S+)", text, flags=re.M)
    assert "--requeue" in directives and "--open-mode=append" in directives
    assert any(d.startswith("--ntasks-per-node=") for d in directives)
    exported = set(re.findall(r"^export (\w+)=", text, flags=re.M))
    trainstack_vars = set(re.findall(r"\b(TRAINSTACK_\w+)", text))
    assert exported <= {PORT_BASE_VARIABLE, ROLES_VARIABLE} and trainstack_vars <= {PORT_BASE_VARIABLE,
                                                                                    ROLES_VARIABLE}


def test_sbatch_script_retries_the_srun_step(tmp_path) -> None:
    """Run the script with a stand-in srun that fails once: the step is started again, with the
    example script, its arguments and the srun options the docs promise."""
    calls = tmp_path / "calls"
    (tmp_path / "srun").write_text(
        '#!/bin/bash\necho "$TRAINSTACK_PORT_BASE $*" >> "$CALLS"\n'
        '[ "$(wc -l < "$CALLS")" -ge 2 ]\n')  # the first step fails, the second succeeds
    (tmp_path / "srun").chmod(0o755)
    env = {"PATH": f"{tmp_path}:{os.environ['PATH']}", "CALLS": str(calls), "SLURM_JOB_ID": "1234",
           "LOGDIR": "/shared/digits", "HOME": str(tmp_path)}
    proc = subprocess.run(["bash", str(SBATCH)], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = calls.read_text().splitlines()
    assert len(lines) == 2 and lines[0] == lines[1]
    base, *argv = shlex.split(lines[0])
    assert base == str(DEFAULT_PORT_BASE + 1234 % JOB_SLOTS * PORTS_PER_JOB)  # cluster_from_slurm's default
    options = argv[:argv.index("python")]
    assert "--kill-on-bad-exit=1" in options and "--distribution=block" in options
    flags = _check_command(argv[argv.index("python"):])
    assert flags["--logdir"] == "/shared/digits"
    assert "the step failed; starting it again" in proc.stdout
