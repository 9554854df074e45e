"""Done-when 2 of issue 24: the model code of tensorpack's examples/basics/mnist-convnet.py and
cifar-convnet.py, as written (tf1_basics_examples.py), trains single-tower and 2-tower with trainstack's names:
the cost falls on a fixed fake batch and the checkpoint holds the variables under their TF1 names."""
from __future__ import annotations

import numpy as np
import pytest
import tf1_basics_examples as examples  # by name: the multi-device worker imports it (see multigpu_cases.py)


def escaped(name: str) -> str:
    """A name as a tf.train.Checkpoint key spells it ("." as "..", "/" as ".S")."""
    return name.replace(".", "..").replace("/", ".S")


def check(costs: list, names: list, keys: list, expected_names: list) -> None:
    assert len(costs) == examples.STEPS and np.all(np.isfinite(costs))
    assert costs[-1] < 0.7 * costs[0], costs  # the same batch every step: the cost falls
    assert sorted(names) == sorted(expected_names)
    # the model's values in the checkpoint are keyed by the TF1 names, and by nothing else
    assert sorted(k for k in keys if k.startswith("model/")) == sorted(
        f"model/untracked/{escaped(n)}/.ATTRIBUTES/VARIABLE_VALUE" for n in expected_names)


@pytest.mark.parametrize("kind", ["mnist", "cifar"])
def test_the_basics_examples_train_single_tower_under_tf1_names(kind, tmp_path):
    check(*examples.train(kind, 1, str(tmp_path)), examples.MNIST_NAMES if kind == "mnist" else examples.CIFAR_NAMES)


@pytest.mark.parametrize("kind", ["mnist", "cifar"])
def test_the_basics_examples_train_on_two_towers_under_tf1_names(kind, cpus, tmp_path):
    check(*cpus.run(examples.two_towers_case, kind, str(tmp_path)),
          examples.MNIST_NAMES if kind == "mnist" else examples.CIFAR_NAMES)
