"""Start a local multi-worker run: one process per task, each with its TF_CONFIG.

    python -m trainstack.distributed.launch -n 2 script.py [args...]
    python -m trainstack.distributed.launch -n 2 --ps 1 --chief script.py [args...]

starts ``n`` worker processes (and ``--ps`` parameter-server tasks and, with
``--chief``, a chief task) of ``python script.py args...`` on free localhost
ports, with ``TF_CONFIG`` naming each one's task; prefixes every line they
print with the task's name (``[worker1] ...``); and waits. When one task
exits non-zero, the others are terminated (SIGTERM, then SIGKILL after
``--grace`` seconds) and the launcher exits with that status. Parameter
servers never exit by themselves: they are stopped once the other tasks
finished, and so are the workers when there is a chief (they serve it).

Several machines: start the script yourself on each host with ``TF_CONFIG``
naming the same cluster and that host's task, e.g. on host ``b``::

    TF_CONFIG='{"cluster": {"worker": ["a:2222", "b:2222"]}, "task": {"type": "worker", "index": 1}}' \\
        python script.py args...

(:class:`~trainstack.distributed.ClusterSpec` ``.to_tf_config()`` writes it.)
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import IO

from .cluster import TF_CONFIG, ClusterSpec, local_cluster

__all__ = ["launch", "main"]


def _pump(prefix: str, stream: IO[bytes], out: IO[str], lock: threading.Lock) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace").rstrip("\n")
        with lock:
            out.write(f"[{prefix}] {line}\n")
            out.flush()
    stream.close()


def launch(command: Sequence[str], num_workers: int, num_ps: int = 0, chief: bool = False,
           grace: float = 5.0, timeout: float | None = None, env: dict[str, str] | None = None) -> int:
    """Run ``command`` once per task of a local cluster; return the exit status (0: all succeeded).

    ``timeout``: seconds before everything is stopped (status 124); None waits forever.
    """
    if not command:
        raise ValueError("launch() needs the command to run (e.g. ['python', 'script.py'])")
    cluster = local_cluster(num_workers, num_ps, chief)
    spec_tasks = [(t, i) for t in cluster for i in range(len(cluster[t]))]
    lock = threading.Lock()
    procs: dict[str, subprocess.Popen] = {}
    pumps = []
    for task_type, index in spec_tasks:
        spec = ClusterSpec(cluster, task_type, index)
        child_env = dict(os.environ if env is None else env)
        child_env[TF_CONFIG] = spec.to_tf_config()
        child_env.setdefault("PYTHONUNBUFFERED", "1")
        proc = subprocess.Popen(list(command), env=child_env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        procs[spec.task_name] = proc
        pump = threading.Thread(target=_pump, args=(spec.task_name, proc.stdout, sys.stdout, lock),
                                daemon=True)
        pump.start()
        pumps.append(pump)
    # with a chief (ParameterServerStrategy), workers serve like ps tasks: the chief's end is the run's
    servers = {name for name in procs if name.startswith("ps") or (chief and name.startswith("worker"))}
    deadline = None if timeout is None else time.monotonic() + timeout
    status = 0
    try:
        while True:
            running = {n: p for n, p in procs.items() if p.poll() is None}
            failed = [(n, p.returncode) for n, p in procs.items() if p.returncode not in (None, 0)]
            if failed:
                name, code = failed[0]
                _say(lock, f"{name} exited with status {code}; stopping the other tasks")
                status = code if code > 0 else 128 - code
                break
            if not set(running) - servers:
                break
            if deadline is not None and time.monotonic() > deadline:
                _say(lock, f"timeout after {timeout} s; stopping the tasks")
                status = 124
                break
            time.sleep(0.1)
    except KeyboardInterrupt:
        status = 130
    finally:
        _stop(procs, grace)
        for pump in pumps:
            pump.join(timeout=2)
    return status


def _stop(procs: dict[str, subprocess.Popen], grace: float) -> None:
    """SIGTERM every task still running (its process group), SIGKILL those left after ``grace``."""
    alive = [p for p in procs.values() if p.poll() is None]
    for p in alive:
        _signal_group(p, signal.SIGTERM)
    end = time.monotonic() + grace
    for p in alive:
        try:
            p.wait(timeout=max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_group(p, signal.SIGKILL)
            p.wait()


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def _say(lock: threading.Lock, message: str) -> None:
    with lock:
        sys.stderr.write(f"[launch] {message}\n")
        sys.stderr.flush()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trainstack.distributed.launch",
        description="Start N local workers (and parameter servers / a chief) of a training script, "
                    "each with its TF_CONFIG. For several hosts, set TF_CONFIG on each yourself.")
    parser.add_argument("-n", "--workers", type=int, required=True, help="worker processes")
    parser.add_argument("--ps", type=int, default=0, help="parameter-server tasks")
    parser.add_argument("--chief", action="store_true", help="add a chief task (ParameterServerStrategy)")
    parser.add_argument("--grace", type=float, default=5.0,
                        help="seconds between SIGTERM and SIGKILL when stopping tasks")
    parser.add_argument("--timeout", type=float, default=None, help="stop everything after this many s")
    parser.add_argument("script", help="the Python script each task runs")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    ns = parser.parse_args(argv)
    if ns.workers < 1:
        parser.error(f"-n must be >= 1, got {ns.workers}")
    if ns.ps < 0:
        parser.error(f"--ps must be >= 0, got {ns.ps}")
    if not os.path.exists(ns.script):
        parser.error(f"script {ns.script!r} does not exist")
    signal.signal(signal.SIGTERM, _interrupt)  # a terminated launcher stops its tasks too
    return launch([sys.executable, ns.script, *ns.args], ns.workers, ns.ps, ns.chief, ns.grace, ns.timeout)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
