"""The timeline of an elastic Horovod run: time lost per membership change, steps redone.

Runs ``tests/distributed/elastic_job.py`` (ElasticHorovodTrainer, a tiny logistic
regression, ModelSaver/JSONWriter/ProgressBar) under horovodrun's elastic driver on
this machine, with a host discovery script whose output this script changes while
the job trains, as tests/distributed/test_horovod_elastic.py does:

1. 2 workers (hosts ``localhost`` and ``127.0.0.1``, both this machine);
2. shrink: ``127.0.0.1`` leaves the discovery output -> 1 worker;
3. grow: it comes back -> a new process starts and receives the state -> 2 workers;
4. failure: ``kill -9`` of rank 0 -> the survivor rolls back to the last commit -> 1 worker.

Every worker records the time of each step; the report gives, for each change, the
stall (the time from the last step before it to the first step after it, less one
step at the new size) and the steps redone (finished steps rolled back and made
again), plus the steady step time and the commit time (capture, broadcast, copy).

    python benchmarks/elastic_timeline.py [--commit-every 50] [--step-sleep 0.01] [--steps 200]

Needs Horovod (``python scripts/install_horovod.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

JOB = Path(__file__).resolve().parent.parent / "tests" / "distributed" / "elastic_job.py"
TWO_HOSTS = "localhost:1\n127.0.0.1:1\n"


def records(out: Path) -> list[dict]:
    found = []
    for path in out.glob("steps-*.jsonl"):
        for line in path.read_text().splitlines():
            try:
                found.append(json.loads(line))
            except json.JSONDecodeError:  # a line being written
                pass
    return sorted(found, key=lambda r: r["t"])


def wait_for(proc: subprocess.Popen, out: Path, what: str, condition: Callable[[list[dict]], bool],
             timeout: float = 300) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rs = records(out)
        if rs and condition(rs):
            return rs
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"the job did not reach '{what}'; see {out / 'horovodrun.log'}")


def run_job(out: Path, args: argparse.Namespace) -> tuple[list[dict], dict, list[dict]]:
    """Run the scenario; return the step records, the kill, and the surviving workers' results."""
    (out / "hosts").write_text(TWO_HOSTS)
    script = out / "discover.sh"
    script.write_text(f"#!/bin/sh\ncat {out / 'hosts'}\n")
    script.chmod(0o755)
    cmd = [sys.executable, "-c", "from horovod.runner.launch import run_commandline; run_commandline()",
           "-np", "2", "--min-np", "1", "--max-np", "2", "--host-discovery-script", str(script),
           "--network-interfaces", "lo", "--elastic-timeout", "120", "--start-timeout", "120",
           sys.executable, str(JOB), "--out", str(out), "--epochs", str(args.epochs), "--steps", str(args.steps),
           "--batches", str(2 * args.steps), "--commit-every", str(args.commit_every),
           "--step-sleep", str(args.step_sleep)]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "", "PYTHONUNBUFFERED": "1"}
    with open(out / "horovodrun.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    gap = args.steps_between

    wait_for(proc, out, "steps at 2 workers", lambda rs: sum(r["size"] == 2 for r in rs) >= 2 * gap)
    (out / "hosts").write_text("localhost:1\n")
    wait_for(proc, out, "steps at 1 worker", lambda rs: sum(r["size"] == 1 for r in rs) >= gap)
    (out / "hosts").write_text(TWO_HOSTS)

    def regrown(rs: list[dict]) -> bool:
        last_single = max(r["t"] for r in rs if r["size"] == 1)
        again = [r for r in rs if r["size"] == 2 and r["t"] > last_single]
        # mid-way between two commits: the failure then redoes about commit_every / 2 steps
        return len(again) >= 2 * gap and again[-1]["step"] % args.commit_every == args.commit_every // 2

    rs = wait_for(proc, out, "2 workers again", regrown)
    victim = next(r for r in reversed(rs) if r["rank"] == 0)
    os.kill(victim["pid"], signal.SIGKILL)
    killed = {"pid": victim["pid"], "time": time.time()}
    code = proc.wait(timeout=600)
    if code != 0:
        raise SystemExit(f"horovodrun exited with {code}; see {out / 'horovodrun.log'}")
    results = [json.loads(p.read_text()) for p in out.glob("result-*.json")]
    return records(out), killed, results


def step_time(rs: list[dict], size: int) -> float:
    """The median time between two steps of one worker at ``size`` workers (steady state)."""
    gaps = []
    for pid in {r["pid"] for r in rs}:
        mine = [r for r in rs if r["pid"] == pid and r["size"] == size]
        gaps += [b["t"] - a["t"] for a, b in zip(mine, mine[1:]) if b["step"] == a["step"] + 1]
    return statistics.median(gaps)


def changes(rs: list[dict], killed: dict) -> list[dict]:
    """One row per membership change: sizes, global step, stall, steps redone."""
    rows = []
    steps_seen: dict[int, int] = {}
    for a, b in zip(rs, rs[1:]):
        steps_seen[a["pid"]] = max(steps_seen.get(a["pid"], 0), a["step"])
        if a["size"] == b["size"]:
            continue
        failure = killed["time"] < b["t"] and not any(row["what"].startswith("failure") for row in rows) \
            and a["t"] <= killed["time"]
        redone = steps_seen.get(b["pid"], b["step"] - 1) - (b["step"] - 1) if failure else 0
        stall = b["t"] - a["t"] - step_time(rs, b["size"])
        what = ("failure (kill -9 rank 0)" if failure else "shrink (host removed)" if b["size"] < a["size"]
                else "grow (host added, new process)")
        rows.append({"what": what, "sizes": f"{a['size']} -> {b['size']}", "step": a["step"], "stall": stall,
                     "redone": redone, "lost": stall + redone * step_time(rs, b["size"])})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commit-every", type=int, default=50)
    parser.add_argument("--step-sleep", type=float, default=0.01, help="added to each step (a slower model)")
    parser.add_argument("--steps", type=int, default=200, help="steps per epoch")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--steps-between", type=int, default=100, help="steps to make between two changes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="elastic-timeline-") as tmp:
        out = Path(tmp)
        start = time.time()
        rs, killed, results = run_job(out, args)
        wall = time.time() - start
        commits = [e["seconds"] for r in results for e in r["events"] if e["kind"] == "commit"]
    load = os.getloadavg()[0]
    print(f"ElasticHorovodTrainer (Gloo), horovodrun --min-np 1 --max-np 2, commit_every={args.commit_every}, "
          f"{args.epochs}x{args.steps} steps, +{args.step_sleep * 1000:.0f} ms per step; {os.cpu_count()} cores, "
          f"load average {load:.1f}; job wall time {wall:.0f} s")
    print(f"steady step: {step_time(rs, 2) * 1000:.1f} ms at 2 workers, {step_time(rs, 1) * 1000:.1f} ms at 1; "
          f"commit: median {statistics.median(commits) * 1000:.1f} ms ({len(commits)} commits on the survivor)")
    print(f"{'change':32s} {'workers':>8s} {'at step':>8s} {'stall s':>8s} {'redone':>7s} {'lost s':>7s}")
    for row in changes(rs, killed):
        print(f"{row['what']:32s} {row['sizes']:>8s} {row['step']:8d} {row['stall']:8.2f} {row['redone']:7d} "
              f"{row['lost']:7.2f}")
    joined = [r for r in results if r["started"] > rs[0]["t"]]  # the survivor is the process that joined
    if joined:
        j = joined[0]
        first = min(r["t"] for r in rs if r["pid"] == j["pid"])
        print(f"the joining process: Python + TensorFlow + Horovod init {j['initialized'] - j['started']:.1f} s, "
              f"model and step set-up {j['ready'] - j['initialized']:.1f} s, callbacks' set-up and the state's "
              f"broadcast to its first step {first - j['ready']:.1f} s")
    final = results[0]["global_step"] if results else None
    print(f"final global step {final} of {args.epochs * args.steps} planned; survivors: {len(results)}")


if __name__ == "__main__":
    main()
