"""tensorpack's examples/basics/mnist-convnet.py model code, as written, under `from trainstack.tensorpack import *`
(the verbatim script, ported: tf1_basics_examples.py loads it; test_tf1_basics_examples.py trains it and
cifar-convnet.py single and 2-tower)."""
from __future__ import annotations

import numpy as np

# examples/basics/mnist-convnet.py (tensorpack 1547a54) as written, ported: the script itself does the star import
from tf1_basics_examples import IMAGE_SIZE  # noqa: E402
from tf1_basics_examples import MnistModel as Model  # noqa: E402

from trainstack.tensorpack import *  # noqa: E402,F403 - what the ported script writes for `from tensorpack import *`
from trainstack.tensorpack import tfv1 as tf  # noqa: E402 - `from tensorpack import tfv1 as tf`


def test_mnist_convnet_trains_under_from_trainstack_import_star(tmp_path):
    rng = np.random.default_rng(0)
    label = rng.integers(0, 10, size=4).astype("int32")
    image = (rng.uniform(size=(4, IMAGE_SIZE, IMAGE_SIZE)) * 0.5 + 0.05 * label[:, None, None]).astype("float32")
    trainer = SimpleTrainer()  # noqa: F405
    launch_train_with_config(TrainConfig(  # noqa: F405
        model=Model(), dataflow=[(image, label)] * 2, max_epoch=1, steps_per_epoch=2,
        callbacks=[ModelSaver(checkpoint_dir=str(tmp_path))]), trainer)  # noqa: F405
    names = [f"{layer}/{p}" for layer in ("conv0", "conv1", "conv2", "conv3", "fc0", "fc1") for p in "Wb"]
    assert [v.name.split(":")[0] for v in trainer.tower_func.variables] == names
    keys = {k for k, _ in tf.train.list_variables(str(tmp_path)) if k.startswith("model/")}
    assert keys == {f"model/untracked/{n.replace('/', '.S')}/.ATTRIBUTES/VARIABLE_VALUE" for n in names}
    assert np.isfinite(trainer.monitors.get_latest("total_cost"))
    assert trainer.monitors.get_latest("param-summary/fc0/W-rms") > 0
