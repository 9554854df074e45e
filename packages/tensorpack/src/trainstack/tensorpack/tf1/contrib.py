"""``tf.contrib`` for tensorpack's scripts (``tfv1.contrib``): ``rnn``, ``layers`` and ``slim``.

TensorFlow 2 has no ``tf.contrib``. tensorpack's examples use three parts of it, given here with
TF1's formulas, defaults and variable names: ``rnn`` (the LSTM cells and ``static_rnn``,
``rnn_cells.py``), ``layers`` (``conv2d``, ``fully_connected``, the pools, ``flatten``, the
initializers and regularizers, ``contrib_layers.py``; ``batch_norm``, ``contrib_batch_norm.py``) and
``slim``, whose ``slim.layers`` and top-level layer functions are the same ``layers``, with
``arg_scope`` and ``add_arg_scope`` (``slim_arg_scope.py``) and ``slim.nets.resnet_v1``
(``slim_nets/``). The port command rewrites ``import tensorflow.contrib.slim as slim`` and ``from
tensorflow.contrib import slim`` (likewise ``layers``, ``rnn``) to ``from trainstack.tensorpack.tf1.contrib
import slim``, and ``from tensorflow.contrib.slim.nets import resnet_v1`` to ``from
trainstack.tensorpack.tf1.slim_nets import resnet_v1``. Every other name under these
three, and every other part of ``tf.contrib``, raises a :class:`TF1CallError` naming it.
"""
from __future__ import annotations

import types
from typing import Any

from . import contrib_batch_norm, contrib_layers, rnn_cells, slim_arg_scope, slim_nets
from .switch import TF1CallError

__all__ = ["rnn", "layers", "slim"]


class _Namespace(types.ModuleType):
    """A ``tf.contrib`` module of the given names; any other name is a TF1CallError."""

    def __init__(self, name: str, names: dict[str, Any], refuse: Any) -> None:
        super().__init__(name)
        self.__dict__.update(names)
        self._refuse = refuse

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise self._refuse(self.__name__, name)

    def __dir__(self) -> list[str]:
        return sorted(k for k in self.__dict__ if not k.startswith("_"))


def _refuse_rnn(namespace: str, name: str) -> TF1CallError:
    return TF1CallError(f"{namespace}.{name}: not provided by trainstack's tfv1.contrib.rnn (which has "
                        f"{', '.join(rnn_cells.__all__[:-1])}); write the cell with Keras 3 layers "
                        "(keras.layers.LSTMCell, keras.layers.RNN) instead")


rnn = _Namespace("tf.contrib.rnn", {n: getattr(rnn_cells, n) for n in rnn_cells.__all__ if n != "contrib"},
                 _refuse_rnn)
_LAYERS = {**{n: getattr(contrib_layers, n) for n in contrib_layers.__all__}, "batch_norm": contrib_batch_norm.batch_norm}
layers = _Namespace("tf.contrib.layers", _LAYERS, contrib_layers.refuse_name)
slim = _Namespace("tf.contrib.slim", {"layers": layers, "nets": slim_nets, **_LAYERS,
                                      **{n: getattr(slim_arg_scope, n) for n in slim_arg_scope.__all__}},
                  contrib_layers.refuse_name)


def __getattr__(name: str) -> Any:
    if name.startswith("_"):
        raise AttributeError(name)
    raise TF1CallError(f"tf.contrib.{name}: TensorFlow 2 has no tf.contrib, and trainstack's tfv1.contrib has "
                       f"{', '.join(__all__)} only; use TensorFlow 2's or Keras 3's equivalent")
