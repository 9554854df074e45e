"""RuntimeConfig (the TF1 session arguments: tests/tensorpack/test_train_config.py).

TensorFlow initializes its devices once per process and the pytest workers have
already done so, so ``apply()`` is tested in fresh interpreters.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest
import tensorflow as tf

from trainstack.towers.session.runtime import RuntimeConfig


def run_python(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON object on its last line."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_apply_before_tensorflow_starts_then_too_late():
    out = run_python("""
        import json
        import tensorflow as tf
        import trainstack.towers.session.sessinit  # importing the layer must not start TensorFlow's devices
        from trainstack.towers.session.runtime import RuntimeConfig

        config = RuntimeConfig(intra_op_threads=2, inter_op_threads=3, soft_placement=False, xla=True,
                               logical_cpu_devices=3, visible_gpus=[])
        config.apply()
        x = tf.constant(1.0) + 1  # TensorFlow starts here
        out = {
            "cpus": [d.name for d in tf.config.list_logical_devices("CPU")],
            "gpus": len(tf.config.list_logical_devices("GPU")),
            "intra": tf.config.threading.get_intra_op_parallelism_threads(),
            "inter": tf.config.threading.get_inter_op_parallelism_threads(),
            "soft": tf.config.get_soft_device_placement(),
            "jit": tf.config.optimizer.get_jit(),
        }
        config.apply()  # the same settings again: fine
        RuntimeConfig(intra_op_threads=2, logical_cpu_devices=3).apply()  # a subset: fine
        RuntimeConfig(soft_placement=True, xla=False).apply()  # these may change at any time
        out["soft_after"] = tf.config.get_soft_device_placement()
        out["jit_after"] = tf.config.optimizer.get_jit()
        for name, late in [("cpus", RuntimeConfig(logical_cpu_devices=2)),
                           ("threads", RuntimeConfig(inter_op_threads=5))]:
            try:
                late.apply()
                out[name + "_error"] = None
            except RuntimeError as e:
                out[name + "_error"] = str(e)
        print(json.dumps(out))
    """)
    assert out["cpus"] == ["/device:CPU:0", "/device:CPU:1", "/device:CPU:2"]
    assert out["gpus"] == 0
    assert (out["intra"], out["inter"]) == (2, 3)
    assert out["soft"] is False and out["jit"] == "autoclustering"
    assert out["soft_after"] is True and not out["jit_after"]
    for name, setting in (("cpus", "logical_cpu_devices=2"), ("threads", "inter_op_threads=5")):
        message = out[name + "_error"]
        assert message is not None, f"a late {setting} was not rejected"
        assert setting in message and "before any tensor" in message


def test_defaults_apply_even_after_tensorflow_started():
    out = run_python("""
        import json
        import tensorflow as tf
        from trainstack.towers.session.runtime import RuntimeConfig
        tf.constant(0)
        RuntimeConfig().apply()
        print(json.dumps({"soft": tf.config.get_soft_device_placement()}))
    """)
    assert out["soft"] is True


@pytest.mark.gpu
@pytest.mark.skipif(not tf.config.list_physical_devices("GPU"), reason="needs a GPU")
def test_gpu_memory_growth_and_visible_gpus():
    out = run_python("""
        import json
        import tensorflow as tf
        from trainstack.towers.session.runtime import RuntimeConfig
        RuntimeConfig(gpu_memory_growth=True, visible_gpus=[0]).apply()
        gpus = tf.config.get_visible_devices("GPU")
        x = tf.constant(1.0) + 1
        try:
            RuntimeConfig(gpu_memory_growth=False).apply()
            late = None
        except RuntimeError as e:
            late = str(e)
        print(json.dumps({"visible": len(gpus), "logical": len(tf.config.list_logical_devices("GPU")),
                          "growth": [tf.config.experimental.get_memory_growth(g) for g in gpus],
                          "late": late}))
    """)
    assert out["visible"] == 1 and out["logical"] == 1
    assert out["growth"] == [True]
    assert out["late"] is not None and "gpu_memory_growth=False" in out["late"]


def test_visible_gpus_out_of_range():
    n = len(tf.config.list_physical_devices("GPU"))
    with pytest.raises(ValueError, match=rf"names GPUs \[{n}\].*has {n} GPU"):
        RuntimeConfig(visible_gpus=[n]).apply()


def test_arguments_are_checked():
    for kwargs in ({"intra_op_threads": -1}, {"inter_op_threads": 1.5}, {"logical_cpu_devices": 0},
                   {"soft_placement": "yes"}, {"xla": 1}, {"visible_gpus": "0,1"},
                   {"visible_gpus": [0, -1]}, {"gpu_memory_growth": 1}):
        (name,) = kwargs
        with pytest.raises(ValueError, match=name):
            RuntimeConfig(**kwargs)
    config = RuntimeConfig(visible_gpus=[1, 0])
    assert config.visible_gpus == (1, 0)
    assert config == RuntimeConfig(visible_gpus=(1, 0))  # comparable: idempotence is by value
    with pytest.raises(AttributeError):
        config.xla = True  # frozen




@pytest.mark.parametrize("name", ["soft_placement", "gpu_memory_growth", "xla"])
def test_a_flag_is_checked_by_the_one_boolean_rule(name):
    """RuntimeConfig's flags take True, False or None, as every trainstack flag (check_bool): a string
    such as "no", which Python would take as true, is refused, naming the argument."""
    from trainstack.loop import ArgumentError

    with pytest.raises(ArgumentError, match=rf"RuntimeConfig\({name}=\.\.\.\) must be True or False or None, got 'no'"):
        RuntimeConfig(**{name: "no"})
    assert getattr(RuntimeConfig(**{name: False}), name) is False
