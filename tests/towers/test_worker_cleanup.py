"""Input workers are owned by the object that started them (issue 27): a worker killed mid-epoch
fails ``train()`` with an InputWorkerError naming it, and by then its sibling is stopped too.

The program a user writes (a sweep, a notebook calling ``train()`` again and again) runs in
one subprocess, so that this test's own process stays clean: 20 trainings, each with a worker
killed by SIGKILL at step 3, in turn through ``dataflow=MultiProcessDataFlow`` (fed by
SimpleTrainer's FeedInput), ``data=MultiProcessInput`` (a QueueInput) and
``dataflow=MultiProcessMapData`` (a lambda as map function). Afterwards the script has no child
process left but multiprocessing's resource tracker, and exactly the open file descriptors it
had before the first of them (after one warm-up training without workers, which opens what
TensorFlow keeps for the process's lifetime, and the resource tracker's start).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import json, multiprocessing, os, signal, sys
    sys.path.insert(0, {towers_tests!r})
    from conftest import TinyClassifier, make_dataflow
    from multiprocessing import resource_tracker
    from trainstack.dataflow import MultiProcessMapData
    from trainstack.inputs import InputWorkerError, MultiProcessDataFlow, MultiProcessInput
    from trainstack.loop import Callback
    from trainstack.towers import SimpleTrainer, TrainConfig, launch_train_with_config

    def children():
        # pids whose parent is this process, read from /proc (no psutil)
        found = set()
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{{entry}}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) == os.getpid():
                    found.add(int(entry))
        return found

    def cmdline(pid):
        try:
            with open(f"/proc/{{pid}}/cmdline", "rb") as f:
                return f.read().replace(b"\\0", b" ").decode(errors="replace")
        except OSError:
            return "(gone)"

    class KillWorker(Callback):
        # SIGKILL worker 1 of the dataflow at step 3, mid-epoch
        def __init__(self, df):
            self.df, self.pid = df, None
        def _trigger_step(self):
            if self.global_step == 3:
                self.pid = self.df.workers[1].pid
                os.kill(self.pid, signal.SIGKILL)

    data = make_dataflow(10)  # a list of NumPy batches: the workers import no TensorFlow
    # warm-up: what TensorFlow opens once per process (thread pools, ...), and the resource tracker
    launch_train_with_config(TrainConfig(model=TinyClassifier(), dataflow=data, extra_callbacks=[],
                                         monitors=[], steps_per_epoch=10, max_epoch=1), SimpleTrainer())
    resource_tracker.ensure_running()
    fds_before, lasting_children, report = len(os.listdir("/proc/self/fd")), children(), {{"errors": []}}
    for run in range({runs}):
        if run % 3 == 0:
            df = MultiProcessDataFlow(data, 2)
            kwargs = dict(dataflow=df)
        elif run % 3 == 1:
            source = MultiProcessInput(data, 2, queue_size=2)
            df, kwargs = source.dataflow, dict(data=source)
        else:
            df = MultiProcessMapData(data, 2, lambda dp: dp)
            kwargs = dict(dataflow=df)
        kill = KillWorker(df)
        config = TrainConfig(model=TinyClassifier(), callbacks=[kill], extra_callbacks=[], monitors=[],
                             steps_per_epoch=10, max_epoch=1000, **kwargs)
        try:
            launch_train_with_config(config, SimpleTrainer())
        except InputWorkerError as e:
            if f"(pid {{kill.pid}})" not in str(e):
                report["errors"].append(f"run {{run}}: the error does not name pid {{kill.pid}}: {{e}}")
        else:
            report["errors"].append(f"run {{run}}: train() returned although a worker was killed")
        live = [p.pid for p in multiprocessing.active_children()]
        if live:
            report["errors"].append(f"run {{run}}: worker processes still alive after train(): {{live}}")
    report["fds_before"] = fds_before
    report["fds_at_end"] = len(os.listdir("/proc/self/fd"))
    report["active_children"] = [p.pid for p in multiprocessing.active_children()]
    report["children_at_end"] = {{pid: cmdline(pid) for pid in children()}}
    report["lasting_children"] = {{pid: cmdline(pid) for pid in lasting_children}}
    print("REPORT " + json.dumps(report), flush=True)
""")
TOWERS_TESTS = os.path.dirname(os.path.abspath(__file__))
RUNS = 20


def test_killed_workers_leave_no_process_and_no_descriptor_behind():
    code = SCRIPT.format(towers_tests=TOWERS_TESTS, runs=RUNS)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("REPORT ")]
    assert proc.returncode == 0 and lines, f"the script failed:\n{proc.stderr[-4000:]}"
    report = json.loads(lines[-1][len("REPORT "):])

    assert report["errors"] == [], "\n".join(report["errors"])
    assert report["active_children"] == []
    # only multiprocessing's resource tracker (started once, by the first spawn) may remain
    leftover = {pid: cmd for pid, cmd in report["children_at_end"].items() if "resource_tracker" not in cmd}
    assert leftover == {}, f"child processes left after {RUNS} trainings: {leftover}"
    assert report["fds_at_end"] == report["fds_before"], (
        f"open file descriptors grew from {report['fds_before']} before the trainings with workers to "
        f"{report['fds_at_end']} after {RUNS}")


TFDATA_SCRIPT = textwrap.dedent("""
    import json, multiprocessing, sys
    sys.path.insert(0, {towers_tests!r})
    from conftest import TinyClassifier, make_dataflow
    from trainstack.inputs import MultiProcessDataFlow, TFDatasetInput
    from trainstack.towers import SimpleTrainer, TrainConfig, launch_train_with_config

    alive = []
    for run in range(3):
        df = MultiProcessDataFlow(make_dataflow(10), 2)
        config = TrainConfig(model=TinyClassifier(), data=TFDatasetInput(df), callbacks=[], monitors=[],
                             steps_per_epoch=5, max_epoch=2)
        trainer = SimpleTrainer()
        launch_train_with_config(config, trainer)
        alive.append([p.pid for p in multiprocessing.active_children()])
    print("REPORT " + json.dumps({{"alive": alive, "steps": trainer.global_step}}), flush=True)
""")


def test_a_tf_data_input_over_worker_processes_stops_them_when_training_ends():
    code = TFDATA_SCRIPT.format(towers_tests=TOWERS_TESTS)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("REPORT ")]
    assert proc.returncode == 0 and lines, f"the script failed:\n{proc.stderr[-4000:]}"
    report = json.loads(lines[-1][len("REPORT "):])
    assert report["steps"] == 10
    assert report["alive"] == [[], [], []], "worker processes outlived train()"
