"""The local launcher (python -m trainstack.distributed.launch) and the cluster-spec helpers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from trainstack.distributed import ClusterSpec, ClusterSpecError, free_ports, local_cluster

SCRIPT = """
import json, os, sys, time
spec = json.loads(os.environ["TF_CONFIG"])
name = spec["task"]["type"] + str(spec["task"]["index"])
print("config", json.dumps(spec), flush=True)
if os.environ.get("PID_DIR"):
    open(os.path.join(os.environ["PID_DIR"], name), "w").write(str(os.getpid()))
if os.environ.get("READY_DIR"):  # workers end only once every task has printed its config
    open(os.path.join(os.environ["READY_DIR"], name), "w").close()
    tasks = {kind + str(i) for kind, addresses in spec["cluster"].items() for i in range(len(addresses))}
    deadline = time.time() + 60
    while not tasks <= set(os.listdir(os.environ["READY_DIR"])) and time.time() < deadline:
        time.sleep(0.05)
fail = os.environ.get("FAIL_TASK")
if name == fail:
    time.sleep(0.5)
    sys.exit(3)
if fail or spec["task"]["type"] == "ps" or os.environ.get("PID_DIR"):
    time.sleep(120)   # would hang the run if the launcher did not stop it
print("bye", flush=True)
"""


def _launch(tmp_path, *options: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    script = tmp_path / "task.py"
    script.write_text(SCRIPT)
    environ = dict(os.environ, **(env or {}))
    environ.pop("TF_CONFIG", None)
    # the timeout is a hang guard: a task the launcher did not stop sleeps 120 s
    return subprocess.run([sys.executable, "-m", "trainstack.distributed.launch", *options, "--grace", "2",
                           str(script)], env=environ, capture_output=True, text=True, timeout=100)


def _configs(stdout: str) -> dict[str, dict]:
    found = {}
    for line in stdout.splitlines():
        prefix, _, rest = line.partition(" ")
        if rest.startswith("config "):
            found[prefix.strip("[]")] = json.loads(rest[len("config "):])
    return found


def test_launcher_sets_tf_config_per_task_and_prefixes_output(tmp_path) -> None:
    # the workers wait for the ps to have started: else a slow ps is stopped before it printed
    (tmp_path / "ready").mkdir()
    proc = _launch(tmp_path, "-n", "2", "--ps", "1", env={"READY_DIR": str(tmp_path / "ready")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    configs = _configs(proc.stdout)
    assert set(configs) == {"worker0", "worker1", "ps0"}
    clusters = {json.dumps(c["cluster"], sort_keys=True) for c in configs.values()}
    assert len(clusters) == 1  # every task sees the same cluster
    cluster = configs["worker0"]["cluster"]
    assert len(cluster["worker"]) == 2 and len(cluster["ps"]) == 1
    assert len(set(cluster["worker"] + cluster["ps"])) == 3
    assert configs["worker1"]["task"] == {"type": "worker", "index": 1}
    assert "[worker0] bye" in proc.stdout and "[worker1] bye" in proc.stdout  # ps was stopped


def test_a_failing_task_stops_the_others_and_the_launcher_fails(tmp_path) -> None:
    proc = _launch(tmp_path, "-n", "3", env={"FAIL_TASK": "worker1"})
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "worker1 exited with status 3" in proc.stderr
    assert "bye" not in proc.stdout  # the others were stopped in their sleep, not waited for


def test_a_terminated_launcher_stops_its_tasks(tmp_path) -> None:
    script = tmp_path / "task.py"
    script.write_text(SCRIPT)
    pids = tmp_path / "pids"
    pids.mkdir()
    env = dict(os.environ, PID_DIR=str(pids))
    env.pop("TF_CONFIG", None)
    launcher = subprocess.Popen([sys.executable, "-m", "trainstack.distributed.launch", "-n", "2",
                                 "--grace", "2", str(script)], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120  # the tasks start Python; slow under load
    while len(os.listdir(pids)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    tasks = [int((pids / name).read_text()) for name in sorted(os.listdir(pids))]
    assert len(tasks) == 2
    launcher.terminate()
    assert launcher.wait(timeout=30) != 0
    for pid in tasks:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_launcher_rejects_bad_arguments(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-m", "trainstack.distributed.launch", "-n", "0",
                           str(tmp_path / "missing.py")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "-n must be >= 1" in proc.stderr


def test_cluster_spec_from_tf_config_and_args(monkeypatch) -> None:
    cluster = {"worker": ["localhost:1111", "localhost:2222"], "ps": ["localhost:3333"]}
    spec = ClusterSpec.from_args(cluster, "worker", 1)
    monkeypatch.setenv("TF_CONFIG", spec.to_tf_config())
    read = ClusterSpec.from_tf_config()
    assert read == spec and read.task_name == "worker1" and read.task_address == "localhost:2222"
    assert not read.is_chief and read.with_task("worker", 0).is_chief
    assert ClusterSpec.resolve() == spec
    with_chief = ClusterSpec({**cluster, "chief": ["localhost:4444"]}, "chief", 0)
    assert with_chief.is_chief and not with_chief.with_task("worker", 0).is_chief


@pytest.mark.parametrize("cluster, task_type, index, message", [
    ({}, "worker", 0, "non-empty dict"),
    ({"worker": "localhost:1"}, "worker", 0, "non-empty list"),
    ({"worker": ["localhost"]}, "worker", 0, "not a 'host:port'"),
    ({"worker": ["localhost:1"], "boss": ["localhost:2"]}, "worker", 0, "unknown task type 'boss'"),
    ({"worker": ["localhost:1", "localhost:1"]}, "worker", 0, "used by both"),
    ({"worker": ["localhost:1"]}, "ps", 0, "task type 'ps' is not in the cluster"),
    ({"worker": ["localhost:1"]}, "worker", 1, "out of range"),
])
def test_malformed_cluster_specs_are_named(cluster, task_type, index, message) -> None:
    with pytest.raises(ClusterSpecError, match=message):
        ClusterSpec(cluster, task_type, index)


def test_malformed_tf_config(monkeypatch) -> None:
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ClusterSpecError, match="TF_CONFIG is not set"):
        ClusterSpec.from_tf_config()
    with pytest.raises(ClusterSpecError, match="not valid JSON"):
        ClusterSpec.from_tf_config("{cluster")
    with pytest.raises(ClusterSpecError, match='"task" must be'):
        ClusterSpec.from_tf_config('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker"}}')
    with pytest.raises(ClusterSpecError, match="needs task_type and task_index"):
        ClusterSpec.resolve({"worker": ["a:1"]})


def test_free_ports_and_local_cluster() -> None:
    ports = free_ports(3)
    assert len(set(ports)) == 3 and all(0 < p < 65536 for p in ports)
    cluster = local_cluster(2, num_ps=1, chief=True)
    assert [len(cluster[k]) for k in ("chief", "worker", "ps")] == [1, 2, 1]
