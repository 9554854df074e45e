"""tensorpack's layer functions by star import: a ported script's `from trainstack.tensorpack import *` and
`from trainstack.tensorpack.models import *` (tensorpack's `from tensorpack.models import *`) give them; the
layers themselves: tests/tensorpack/test_tf1_layers*.py."""
from __future__ import annotations

LAYER_NAMES = ["Conv2D", "Conv2DTranspose", "Deconv2D", "FullyConnected", "BatchNorm", "LayerNorm", "InstanceNorm",
               "MaxPooling", "AvgPooling", "GlobalAvgPooling", "FixedUnPooling", "Dropout", "BNReLU", "PReLU",
               "Maxout", "ConcatWith", "LinearWrap", "layer_register", "VariableHolder", "disable_layer_logging",
               "argscope", "get_arg_scope", "enable_argscope_for_function", "enable_argscope_for_module"]
# tensorpack.tfutils.varreplace's names, which tensorpack's star imports do not give
VARREPLACE_NAMES = ["custom_getter_scope", "remap_variables", "freeze_variables"]


def test_star_imports_give_tensorpacks_layer_functions():
    from trainstack.tensorpack import tf1

    everything: dict = {}
    exec("from trainstack.tensorpack import *", everything)  # noqa: S102 - what a ported script writes
    assert [n for n in LAYER_NAMES if n not in everything] == []
    assert all(everything[n] is getattr(tf1, n) for n in LAYER_NAMES)
    models: dict = {}
    exec("from trainstack.tensorpack.models import *", models)  # noqa: S102 - tensorpack's `from tensorpack.models import *`
    assert models["Conv2D"] is everything["Conv2D"] and models["regularize_cost"] is everything["regularize_cost"]
    assert "argscope" not in models  # tensorpack.models has no argscope (tensorpack.tfutils has)
    varreplace: dict = {}
    exec(f"from trainstack.tensorpack.tfutils.varreplace import {', '.join(VARREPLACE_NAMES)}", varreplace)  # noqa: S102
    assert all(varreplace[n] is getattr(tf1, n) for n in VARREPLACE_NAMES)
    assert [n for n in VARREPLACE_NAMES if n in everything] == []  # as tensorpack's `from tensorpack import *`
