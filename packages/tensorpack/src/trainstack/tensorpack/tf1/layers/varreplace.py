"""tensorpack's ``tfutils.varreplace``: ``custom_getter_scope``, ``remap_variables``, ``freeze_variables``.

Each enters the current ``tf.compat.v1.variable_scope`` again with a custom getter (without a new
name scope), as tensorpack did; the room's ``get_variable`` calls the getters of the enclosing
scopes, innermost first (``tf1/variables.py``). So, in a tower function::

    with remap_variables(lambda v: quantize(v)):
        x = FullyConnected('fc', x, 10)      # fc/W and fc/b are used quantized
    with freeze_variables(stop_gradient=False, skip_collection=True):
        x = Conv2D('conv0', x, 32, 3)        # conv0/W, conv0/b are created not trainable

The getter applies where a variable is requested inside the block, in every tower and trace.

``remap_variables``'s function sees each variable as TF1 code did: ``v.op.name`` is ``'conv0/W'``
and ``v.name`` is ``'conv0/W:0'`` (DoReFa-Net's ``binarize_weight`` picks its variables by
``v.op.name``), while a TF2 variable made outside the trace has no ``op``. It gets a view of the
variable (:class:`TF1VariableView`) that TensorFlow ops, operators and ``tf.custom_gradient`` take
as the variable; returned as is, the variable itself is what the layer uses.
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

import tensorflow as tf

__all__ = ["custom_getter_scope", "remap_variables", "freeze_variables", "TF1VariableView"]

logger = logging.getLogger("trainstack.tensorpack")


@contextlib.contextmanager
def custom_getter_scope(custom_getter: Callable[..., Any]) -> Iterator[None]:
    """The current variable scope with ``custom_getter`` (TF1's ``custom_getter(getter, name, ...)``)
    added inside the ones it has."""
    scope = tf.compat.v1.get_variable_scope()
    with tf.compat.v1.variable_scope(scope, custom_getter=custom_getter, auxiliary_name_scope=False):
        yield


class _OpName:
    """What TF1 code reads of a variable's ``op``: its ``name`` (``'conv0/W'``)."""

    __slots__ = ("name", "type")

    def __init__(self, name: str) -> None:
        self.name = name
        self.type = "VarHandleOp"

    def __repr__(self) -> str:
        return f"<op {self.name!r}>"


class TF1VariableView:
    """A tower variable as TF1 code saw it: ``op.name`` ``'conv0/W'``, ``name`` ``'conv0/W:0'``; every
    other attribute, operator and conversion to a tensor is the variable's."""

    __slots__ = ("_variable", "_name")

    def __init__(self, variable: Any, name: str) -> None:
        self._variable = variable
        self._name = name

    @property
    def op(self) -> _OpName:
        """``v.op.name``: the variable's TF1 name, without ``:0``."""
        return _OpName(self._name)

    @property
    def name(self) -> str:
        """``v.name``: the TF1 name of the variable's value, ``'conv0/W:0'``."""
        return self._name + ":0"

    @property
    def variable(self) -> Any:
        """The variable itself."""
        return self._variable

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._variable, attr)

    def __repr__(self) -> str:
        return f"<TF1 variable {self.name!r} shape={self._variable.shape} dtype={self._variable.dtype.name}>"

    def __hash__(self) -> int:
        return id(self._variable)

    def __bool__(self) -> bool:
        raise TypeError(f"{self!r} used as a Python bool; use TensorFlow ops (tf.cond) on its value")

    def __array__(self, dtype: Any = None) -> Any:
        return self._variable.__array__(dtype)

    def __tf_tensor__(self, dtype: Any = None, name: str | None = None) -> tf.Tensor:
        """TensorFlow's conversion protocol: the variable's value (no registration in TensorFlow)."""
        return tf.convert_to_tensor(self._variable, dtype=dtype, name=name)


def _operator(name: str) -> Callable[..., Any]:
    def method(self: TF1VariableView, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._variable, name)(*args, **kwargs)

    method.__name__ = name
    return method


for _name in tf.Tensor.OVERLOADABLE_OPERATORS:
    if _name not in ("__eq__", "__ne__") and hasattr(tf.Variable, _name):
        setattr(TF1VariableView, _name, _operator(_name))
TF1VariableView.__eq__ = _operator("__eq__")  # type: ignore[method-assign]
TF1VariableView.__ne__ = _operator("__ne__")  # type: ignore[method-assign]


def remap_variables(fn: Callable[[Any], Any]) -> Any:
    """A context in which every variable requested is used as ``fn(variable)``; ``fn`` sees the
    variable as TF1 code did (``v.op.name == 'conv0/W'``, ``v.name == 'conv0/W:0'``)."""
    def custom_getter(getter: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        v = getter(*args, **kwargs)
        name = args[0] if args else kwargs.get("name")
        view = TF1VariableView(v, name) if isinstance(v, tf.Variable) and name else v
        result = fn(view)
        return result.variable if isinstance(result, TF1VariableView) else result

    return custom_getter_scope(custom_getter)


def freeze_variables(stop_gradient: bool = True, skip_collection: bool = False) -> Any:
    """A context that freezes the variables requested in it.

    ``stop_gradient``: each is used through ``tf.stop_gradient`` (a tensor, not a variable): no
    gradient flows into it through this use. ``skip_collection``: each is created not trainable
    (so only on its creation, the first build), so no trainer trains it; the variable's other
    uses (``regularize_cost``) are then not trained either.
    """
    def custom_getter(getter: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        trainable = kwargs.get("trainable", True)
        name = args[0] if args else kwargs.get("name")
        if skip_collection:
            kwargs["trainable"] = False
        v = getter(*args, **kwargs)
        if trainable and skip_collection and not isinstance(v, tf.Variable):
            logger.warning("freeze_variables(): another custom getter returned %r for %s, not a variable; "
                           "it may still be trained", v, name)
        if trainable and stop_gradient:
            assert name is not None
            v = tf.stop_gradient(v, name="freezed_" + name.replace("/", "_"))
        return v

    return custom_getter_scope(custom_getter)
