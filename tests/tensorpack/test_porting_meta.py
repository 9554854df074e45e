"""Porting with the tensorpack layer: `from trainstack.tensorpack import *` has tensorpack's names, and a
ported script run as a program prints its INFO lines once."""
from __future__ import annotations

import os
import subprocess
import sys

import tensorflow as tf

from trainstack.callbacks import get_logger_dir
from trainstack.loop import HOOKS

PORTED_NAMES = ["logger", "tfv1", "get_global_step_var", "regularize_cost", "l2_regularizer",
                "SimpleDatasetPredictor", "ModelDesc", "TrainConfig", "launch_train_with_config"]
# names tensorpack's own `from tensorpack import *` does not give: a script imports them from their module
PORTED_FROM_MODULES = {"trainstack.tensorpack.utils.gpu": ["get_num_gpu"],
                       "trainstack.tensorpack.tfutils.summary": ["add_param_summary"],
                       "trainstack.tensorpack.utils.argtools": ["memoized", "memoized_method"],
                       "trainstack.tensorpack.graph_builder": ["DataParallelBuilder"],
                       "trainstack.tensorpack.contrib.keras": ["KerasPhaseCallback"]}


def test_star_import_has_the_ported_names():
    namespace: dict = {}
    exec("from trainstack.tensorpack import *", namespace)
    missing = [n for n in PORTED_NAMES if n not in namespace]
    assert not missing
    assert namespace["tfv1"].get_variable is tf.compat.v1.get_variable and namespace["tfv1"].layers.conv2d
    assert namespace["logger"].get_logger_dir is get_logger_dir


def test_the_other_ported_names_import_from_their_tensorpack_modules():
    for module, names in PORTED_FROM_MODULES.items():
        namespace: dict = {}
        exec(f"from {module} import {', '.join(names)}", namespace)
        assert all(callable(namespace[n]) for n in names), module
    from trainstack.tensorpack.utils.gpu import get_num_gpu

    assert get_num_gpu() == len(tf.config.list_physical_devices("GPU"))


def test_keras_phase_callback_is_a_no_op():
    from trainstack.tensorpack.contrib.keras import KerasPhaseCallback

    cb = KerasPhaseCallback(True)
    assert not any(cb.overrides(h) for h in HOOKS)


PORTED_SCRIPT = '''
import sys
import keras, numpy as np, tensorflow as tf
from trainstack.tensorpack import *

class Model(ModelDesc):
    def __init__(self):
        self.fc = keras.layers.Dense(2, name="fc")
    def inputs(self):
        return [tf.TensorSpec([None, 4], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]
    def build_graph(self, x, label):
        logits = tf.identity(self.fc(x), name="logits")
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits),
                              name="cost")
    def optimizer(self):
        return keras.optimizers.SGD(0.1)

df = [(np.ones((4, 4), "float32"), np.zeros(4, "int32"))] * 3
logger.set_logger_dir(sys.argv[1], action="d")
config = TrainConfig(dataflow=df, model=Model(), callbacks=[ModelSaver()], extra_callbacks=[],
                     monitors=[], max_epoch=2)
launch_train_with_config(config, QueueInputTrainer())
pred = OfflinePredictor(PredictConfig(model=Model(), input_names=["x"], output_names=["logits"],
                                      session_init=SmartInit(sys.argv[1])))
logger.info("PREDICTED %s", pred(np.ones((1, 4), "float32"))[0].shape)
'''


def test_a_ported_script_prints_its_info_lines_once(tmp_path):
    # no logging configured, as in a tensorpack script: lines logged before train() (the input
    # chosen) and without any train() (the predictor's restore) are printed, once each, also
    # after TensorFlow's first checkpoint made absl configure the root logger
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, "-c", PORTED_SCRIPT, str(tmp_path / "log")], cwd=tmp_path,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    out = proc.stdout
    assert proc.returncode == 0, out
    assert out.count("Automatically applying QueueInput") == 1, out
    assert out.count("Model saved to") == 2, out
    assert out.count("Restored ") == 1 and "variables from" in out, out
    assert out.count("PREDICTED (1, 2)") == 1, out
    assert "INFO:trainstack" not in out, out
