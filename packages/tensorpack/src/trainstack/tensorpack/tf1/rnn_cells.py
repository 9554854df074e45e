"""TF1's RNN cells, ``tf.contrib.rnn`` (``tfv1.contrib.rnn``): the LSTM cells and ``static_rnn``.

tensorpack's ``Char-RNN`` and ``PennTreebank`` examples build their LSTMs from ``tf.contrib.rnn``,
which TensorFlow 2 does not have (``tf.compat.v1.nn.rnn_cell``'s cells raise "not available with
Keras 3"). These are TF1's cells written out, with TF1's formulas, defaults and variable names,
their variables made by ``tf.compat.v1.get_variable`` (the room's, in a tower: created by the first
tower, reused by the others, checkpointed under the TF1 names):

- ``BasicLSTMCell(num_units, forget_bias=1.0, activation=tanh)`` and ``LSTMBlockCell(num_units,
  forget_bias=1.0)``: ``[i, j, f, o] = [x, h] @ kernel + bias``; ``c' = c * sigmoid(f + forget_bias)
  + sigmoid(i) * tanh(j)``; ``h' = tanh(c') * sigmoid(o)``; variables ``<scope>/kernel``
  (``[input + units, 4 units]``, the variable scope's default initializer: Glorot uniform) and
  ``<scope>/bias`` (zeros), under ``basic_lstm_cell`` and ``lstm_cell``;
- ``MultiRNNCell(cells)``: cell ``k`` under ``multi_rnn_cell/cell_k``, each on the last one's output;
- ``DropoutWrapper(cell, input_keep_prob, output_keep_prob)``: dropout of the input and output
  (always, as TF1's: scripts wrap the cell only when training);
- ``LSTMStateTuple(c, h)``; ``static_rnn(cell, inputs, initial_state, dtype, scope='rnn')``: the cell
  over the list of inputs, variables made at the first step and reused after (TF1's).

``tf.nn.dynamic_rnn`` (``tfv1.nn.dynamic_rnn``, TensorFlow's own ``tf.compat.v1`` function, which needs
nothing of the room) runs these cells as TF1 did: over a batch-major or time-major tensor in a
``tf.while_loop``, with ``sequence_length`` (outputs zero past each length, the state kept from it), the
variables under ``variable_scope(scope or 'rnn')`` (``rnn/multi_rnn_cell/cell_0/lstm_cell/kernel``).

What TF1 had beyond this (peepholes, ``cell_clip``, projections, ``static_rnn``'s ``sequence_length``,
``state_is_tuple=False``) is a :class:`TF1CallError` naming it.
"""
from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from .switch import TF1CallError

__all__ = ["LSTMStateTuple", "BasicLSTMCell", "LSTMBlockCell", "MultiRNNCell", "DropoutWrapper", "static_rnn"]


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """An LSTM's state: the cell state ``c`` and the output ``h``."""

    __slots__ = ()

    @property
    def dtype(self) -> tf.DType:
        return self.c.dtype


def _refuse(call: str, what: str) -> None:
    raise TF1CallError(f"{call}: {what} is not supported by trainstack's TF1 RNN cells (tfv1.contrib.rnn); "
                       "write the cell with Keras 3 layers (keras.layers.LSTMCell, keras.layers.RNN) instead")


class _LSTM:
    """The LSTM both TF1 cells compute (see the module docstring)."""

    scope_name = "lstm"

    def __init__(self, num_units: int, forget_bias: float = 1.0, activation: Callable | None = None,
                 name: str | None = None) -> None:
        self.num_units = int(num_units)
        self.forget_bias = float(forget_bias)
        self.activation = activation or tf.tanh
        self.name = name or self.scope_name

    @property
    def state_size(self) -> LSTMStateTuple:
        return LSTMStateTuple(self.num_units, self.num_units)

    @property
    def output_size(self) -> int:
        return self.num_units

    def zero_state(self, batch_size: Any, dtype: tf.DType) -> LSTMStateTuple:
        zeros = tf.zeros(tf.stack([batch_size, self.num_units]), dtype)
        return LSTMStateTuple(zeros, zeros)

    def __call__(self, inputs: tf.Tensor, state: LSTMStateTuple, scope: Any = None) -> tuple[tf.Tensor, LSTMStateTuple]:
        c, h = state
        with tf.compat.v1.variable_scope(scope or self.name):
            depth = int(inputs.shape[-1]) + self.num_units
            kernel = tf.compat.v1.get_variable("kernel", [depth, 4 * self.num_units], dtype=inputs.dtype)
            bias = tf.compat.v1.get_variable("bias", [4 * self.num_units], dtype=inputs.dtype,
                                             initializer=tf.compat.v1.zeros_initializer())
        gates = tf.matmul(tf.concat([inputs, h], 1), kernel) + bias
        i, j, f, o = tf.split(gates, 4, axis=1)
        new_c = c * tf.sigmoid(f + self.forget_bias) + tf.sigmoid(i) * self.activation(j)
        new_h = self.activation(new_c) * tf.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)


class BasicLSTMCell(_LSTM):
    """TF1's ``tf.contrib.rnn.BasicLSTMCell`` (variables under ``basic_lstm_cell``)."""

    scope_name = "basic_lstm_cell"

    def __init__(self, num_units: int, forget_bias: float = 1.0, state_is_tuple: bool = True,
                 activation: Callable | None = None, reuse: Any = None, name: str | None = None,
                 dtype: Any = None) -> None:
        if not state_is_tuple:
            _refuse("BasicLSTMCell(state_is_tuple=False)", "a concatenated state")
        super().__init__(num_units, forget_bias, activation, name)


class LSTMBlockCell(_LSTM):
    """TF1's ``tf.contrib.rnn.LSTMBlockCell`` (variables under ``lstm_cell``)."""

    scope_name = "lstm_cell"

    def __init__(self, num_units: int, forget_bias: float = 1.0, cell_clip: Any = None,
                 use_peephole: bool = False, reuse: Any = None, dtype: Any = None, name: str = "lstm_cell") -> None:
        if use_peephole:
            _refuse("LSTMBlockCell(use_peephole=True)", "a peephole connection")
        if cell_clip is not None and cell_clip > 0:
            _refuse(f"LSTMBlockCell(cell_clip={cell_clip})", "clipping the cell state")
        super().__init__(num_units, forget_bias, None, name)


class MultiRNNCell:
    """TF1's ``MultiRNNCell``: the cells stacked, cell ``k`` under ``multi_rnn_cell/cell_k``."""

    def __init__(self, cells: Sequence[Any], state_is_tuple: bool = True) -> None:
        if not state_is_tuple:
            _refuse("MultiRNNCell(state_is_tuple=False)", "a concatenated state")
        if not cells:
            raise ValueError("MultiRNNCell: must specify at least one cell")
        self.cells = list(cells)

    @property
    def state_size(self) -> tuple:
        return tuple(c.state_size for c in self.cells)

    @property
    def output_size(self) -> int:
        return self.cells[-1].output_size

    def zero_state(self, batch_size: Any, dtype: tf.DType) -> tuple:
        return tuple(c.zero_state(batch_size, dtype) for c in self.cells)

    def __call__(self, inputs: tf.Tensor, state: Sequence[Any], scope: Any = None) -> tuple[tf.Tensor, tuple]:
        if len(state) != len(self.cells):
            raise ValueError(f"MultiRNNCell: {len(self.cells)} cells but a state of {len(state)}")
        new_states = []
        with tf.compat.v1.variable_scope(scope or "multi_rnn_cell"):
            for k, (cell, s) in enumerate(zip(self.cells, state)):
                with tf.compat.v1.variable_scope(f"cell_{k}"):
                    inputs, s = cell(inputs, s)
                new_states.append(s)
        return inputs, tuple(new_states)


class DropoutWrapper:
    """TF1's ``DropoutWrapper``: dropout of the cell's input and output, at every call."""

    def __init__(self, cell: Any, input_keep_prob: float = 1.0, output_keep_prob: float = 1.0,
                 state_keep_prob: float = 1.0, variational_recurrent: bool = False, **kwargs: Any) -> None:
        if state_keep_prob != 1.0 or variational_recurrent:
            _refuse("DropoutWrapper(state_keep_prob=, variational_recurrent=)", "dropout of the state")
        self.cell, self.input_keep_prob, self.output_keep_prob = cell, input_keep_prob, output_keep_prob

    state_size = property(lambda self: self.cell.state_size)
    output_size = property(lambda self: self.cell.output_size)

    def zero_state(self, batch_size: Any, dtype: tf.DType) -> Any:
        return self.cell.zero_state(batch_size, dtype)

    def __call__(self, inputs: tf.Tensor, state: Any, scope: Any = None) -> tuple[tf.Tensor, Any]:
        if _dropping(self.input_keep_prob):
            inputs = tf.nn.dropout(inputs, rate=1 - self.input_keep_prob)
        output, state = self.cell(inputs, state, scope=scope)
        if _dropping(self.output_keep_prob):
            output = tf.nn.dropout(output, rate=1 - self.output_keep_prob)
        return output, state


def _dropping(keep: Any) -> bool:
    return not (isinstance(keep, (int, float)) and keep == 1.0)


def static_rnn(cell: Any, inputs: Sequence[tf.Tensor], initial_state: Any = None, dtype: Any = None,
               sequence_length: Any = None, scope: Any = None) -> tuple[list[tf.Tensor], Any]:
    """TF1's ``static_rnn``: ``cell`` over ``inputs`` (a list, one tensor per time step) under
    ``variable_scope(scope or 'rnn')``, its variables made at the first step and reused after;
    the outputs and the last state."""
    if sequence_length is not None:
        raise TF1CallError("static_rnn(sequence_length=...): a length per sequence is not supported by "
                           "trainstack's static_rnn; use tf.nn.dynamic_rnn(cell, tf.stack(inputs, axis=1), "
                           "sequence_length, initial_state, dtype=...) (tfv1.nn.dynamic_rnn, TensorFlow's own), "
                           "which runs these cells with TF1's semantics")
    if not inputs:
        raise ValueError("static_rnn: inputs must not be empty")
    with tf.compat.v1.variable_scope(scope or "rnn") as varscope:
        state = initial_state
        if state is None:
            if dtype is None:
                raise ValueError("static_rnn: if no initial_state is given, dtype must be")
            state = cell.zero_state(tf.shape(inputs[0])[0], dtype)
        outputs = []
        for t, x in enumerate(inputs):
            if t > 0:
                varscope.reuse_variables()
            output, state = cell(x, state)
            outputs.append(output)
    return outputs, state

