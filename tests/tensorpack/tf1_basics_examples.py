"""tensorpack's examples/basics/mnist-convnet.py and examples/basics/cifar-convnet.py (tensorpack master,
1547a54), their ``Model`` classes as the port command makes them: the verbatim scripts in
tests/tensorpack/examples/basics/, ported (import lines only) and run as a module, not as ``__main__``.
Trained by tests/tensorpack/test_tf1_basics_examples.py, in-process and in the multi-device worker (see
multigpu_cases.py), on tiny fake data."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from trainstack.callbacks import ModelSaver, ScheduledHyperParamSetter
from trainstack.loop import Callback
from trainstack.tensorpack.port import port_source
from trainstack.tensorpack.tf1 import SimpleTrainer, SyncMultiGPUTrainerReplicated
from trainstack.towers import TrainConfig, launch_train_with_config

BASICS = Path(__file__).parent / "examples" / "basics"


def ported_script(name: str) -> dict:
    """The namespace of the basics script ``name``, ported by the port command and run as a module."""
    path = BASICS / name
    source, _ = port_source(path.read_text(), str(path))
    namespace = {"__name__": "ported_" + path.stem.replace("-", "_"), "__file__": str(path)}
    exec(compile(source, str(path), "exec"), namespace)  # noqa: S102 - the example as its user runs it
    return namespace


_mnist = ported_script("mnist-convnet.py")
MnistModel, IMAGE_SIZE = _mnist["Model"], _mnist["IMAGE_SIZE"]
CifarModel = ported_script("cifar-convnet.py")["Model"]


# ---- the training -------------------------------------------------------------------------------------------
MNIST_NAMES = [f"{layer}/{p}" for layer in ("conv0", "conv1", "conv2", "conv3", "fc0", "fc1") for p in "Wb"]
CIFAR_NAMES = [name for layer in ("conv1.1", "conv1.2", "conv2.1", "conv2.2", "conv3.1", "conv3.2")
               for name in (f"{layer}/W", f"{layer}/bn/gamma", f"{layer}/bn/beta", f"{layer}/bn/mean/EMA",
                            f"{layer}/bn/variance/EMA")] + [f"{layer}/{p}" for layer in ("fc0", "fc1", "linear")
                                                            for p in "Wb"]


STEPS = 4


def fake_batches(kind: str, n: int, batch: int = 4, seed: int = 0) -> list:
    """``n`` batches of tiny fake images whose label shifts their mean (learnable)."""
    rng = np.random.default_rng(seed)
    shape = (IMAGE_SIZE, IMAGE_SIZE) if kind == "mnist" else (30, 30, 3)
    out = []
    for _ in range(n):
        label = rng.integers(0, 3, size=batch).astype("int32")
        image = (rng.uniform(size=(batch, *shape)) * 0.5 + 0.25 * label.reshape(-1, *[1] * len(shape)))
        out.append((image.astype("float32"), label))
    return out


class CostRecorder(Callback):
    """The cost of every step."""

    def __init__(self, name: str):
        self.name, self.costs = name, []

    def _before_run(self, ctx):
        return [self.name]

    def _after_run(self, ctx, values):
        self.costs.append(float(values.results[0]))


def train(kind: str, towers: int, checkpoint_dir: str, steps: int = STEPS) -> tuple[list, list, list]:
    """(the cost of each step, the model's variable names, the checkpoint's keys) of ``steps`` steps of the
    example's model on the same 1 batch per tower, as SimpleTrainer (1 tower) or SyncMultiGPUTrainerReplicated."""
    model = MnistModel() if kind == "mnist" else CifarModel(3)
    recorder = CostRecorder("total_cost" if kind == "mnist" else "cost")
    callbacks = [recorder, ModelSaver(checkpoint_dir=checkpoint_dir)]
    if kind == "cifar":  # the script's StatMonitorParamSetter lowers this variable; on 4 images, from the start
        callbacks.append(ScheduledHyperParamSetter("learning_rate", [(0, 1e-3)]))
    trainer = SimpleTrainer() if towers == 1 else SyncMultiGPUTrainerReplicated(towers)
    launch_train_with_config(TrainConfig(model=model, dataflow=fake_batches(kind, towers) * steps,
                                         max_epoch=1, steps_per_epoch=steps, monitors=[],
                                         callbacks=callbacks), trainer)
    import tensorflow  # noqa: PLC0415

    names = [v.name.split(":")[0] for v in trainer.tower_func.variables]
    keys = [k for k, _ in tensorflow.train.list_variables(checkpoint_dir)]
    return recorder.costs, names, keys


def two_towers_case(devices, kind: str, checkpoint_dir: str):
    """``train(kind, 2, ...)`` in the multi-device worker."""
    return train(kind, 2, checkpoint_dir)
