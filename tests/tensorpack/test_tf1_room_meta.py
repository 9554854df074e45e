"""The TF1 room's names: `from trainstack.tensorpack import *` (which loads them all) replaces nothing in
TensorFlow or Keras, in a fresh interpreter; the meta-package's own check is tests/test_meta_package.py."""
from __future__ import annotations

import subprocess
import sys
import textwrap


def test_star_importing_the_tensorpack_layer_replaces_nothing():
    code = textwrap.dedent("""
        import tensorflow as tf, keras
        ids = (id(tf.compat.v1.get_variable), id(tf.summary.image), id(tf.summary.scalar))
        import trainstack.tensorpack
        from trainstack.tensorpack import *
        assert (id(tf.compat.v1.get_variable), id(tf.summary.image), id(tf.summary.scalar)) == ids
        assert not hasattr(keras.optimizers.Optimizer, 'minimize')
        assert callable(Conv2D) and callable(launch_train_with_config)  # the names are there
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
