"""The TF1 room with the meta-package (issue 32): `from trainstack import *` replaces nothing in
TensorFlow or Keras (the issue's own check, in a fresh interpreter)."""
from __future__ import annotations

import subprocess
import sys
import textwrap


def test_importing_the_meta_package_replaces_nothing():
    code = textwrap.dedent("""
        import tensorflow as tf, keras
        ids = (id(tf.compat.v1.get_variable), id(tf.summary.image), id(tf.summary.scalar))
        import trainstack
        from trainstack import *
        assert (id(tf.compat.v1.get_variable), id(tf.summary.image), id(tf.summary.scalar)) == ids
        assert not hasattr(keras.optimizers.Optimizer, 'minimize')
        assert callable(Conv2D) and callable(launch_train_with_config)  # the names are there
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
