"""trainstack.tensorpack mirrors tensorpack 0.11's module tree: every mirrored module imports, its
``__all__`` resolves to trainstack's own objects, and each of tensorpack's public names in it is
provided, or listed in ``_replaced.REPLACED`` (and then a stand-in whose call names the replacement, or
for ``_replaced.IMPORT_ERRORS`` an ImportError), checked against tensorpack 0.11's own source, read with
``ast``, and against its importable modules, ``tensorpack.dataflow`` and ``tensorpack.utils.*``."""
from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

from trainstack.tensorpack import _replaced

TP = Path(importlib.util.find_spec("tensorpack").submodule_search_locations[0])  # not imported: it needs TF1

REQUIRED = [
    "tfutils", *(f"tfutils.{m}" for m in ["summary", "scope_utils", "tower", "varreplace", "argscope", "optimizer",
                                          "gradproc", "export", "common", "symbolic_functions", "sessinit",
                                          "collection"]),
    "models", "callbacks", "input_source", "graph_builder", "train", "predict",
    "dataflow", "dataflow.dataset", "dataflow.imgaug",
    "utils", *(f"utils.{m}" for m in ["viz", "argtools", "gpu", "logger", "fs", "serialize", "stats", "concurrency",
                                      "timer", "utils"]),
    "contrib.keras", "compat",
    *(f"callbacks.{m}" for m in ["base", "concurrency", "graph", "group", "hooks", "inference", "inference_runner",
                                 "misc", "monitor", "param", "prof", "saver", "stats", "steps", "summary", "trigger"]),
    *(f"models.{m}" for m in ["batch_norm", "common", "conv2d", "fc", "layer_norm", "linearwrap", "nonlin", "pool",
                              "regularize", "shape_utils", "shapes"]),
    *(f"train.{m}" for m in ["base", "config", "interface", "model_desc", "tower", "trainers"]),
    *(f"predict.{m}" for m in ["base", "concurrency", "config", "dataset", "feedfree", "multigpu"]),
    "input_source.input_source", "input_source.input_source_base",
    "graph_builder.model_desc", "graph_builder.training", "graph_builder.utils",
    *(f"dataflow.{m}" for m in ["base", "common", "format", "image", "parallel", "parallel_map", "raw", "remote",
                                "serialize"]),
    *(f"dataflow.dataset.{m}" for m in ["bsds500", "caltech101", "cifar", "ilsvrc", "mnist", "places", "svhn"]),
    *(f"dataflow.imgaug.{m}" for m in ["base", "convert", "crop", "deform", "external", "geometry", "imgproc", "meta",
                                       "misc", "noise", "paste", "transform"]),
]
MIRRORED = sorted(
    ".".join(("tensorpack", *p.relative_to(TP).with_suffix("").parts)).removesuffix(".__init__")
    for p in TP.rglob("*.py")
    if (Path(importlib.util.find_spec("trainstack.tensorpack").origin).parent / p.relative_to(TP)).exists())
LAYERS = ["trainstack.loop", "trainstack.dataflow", "trainstack.dataflow.dataset", "trainstack.dataflow.imgaug",
          "trainstack.dataflow.viz", "trainstack.callbacks", "trainstack.callbacks.logger", "trainstack.inputs",
          "trainstack.towers", "trainstack.tensorpack.tf1", "trainstack.distributed"]


def _source(module: str) -> ast.Module:
    path = TP.joinpath(*module.split(".")[1:])
    path = path.with_suffix(".py") if path.with_suffix(".py").exists() else path / "__init__.py"
    return ast.parse(path.read_text())


def _literal_all(tree: ast.Module) -> list[str] | None:
    names = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets) \
                and isinstance(node.value, ast.List):
            names = (names or []) + [e.value for e in node.value.elts]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("extend", "append") \
                and getattr(node.func.value, "id", None) == "__all__":
            arg = node.args[0]  # __all__.append(k) in tensorpack's star-import loops is left to EXPOSES
            if isinstance(arg, ast.Constant | ast.List):
                names = (names or []) + ([arg.value] if isinstance(arg, ast.Constant) else [e.value for e in arg.elts])
    return names


def tensorpack_names(module: str) -> set[str]:
    """The public names of tensorpack 0.11's ``module``: its ``__all__`` (a package's, with those of the
    modules it star-imports), or its public functions and classes where it has none."""
    if module == "tensorpack.utils.logger":  # its __all__ grows in a loop
        return {"set_logger_dir", "auto_set_dir", "get_logger_dir", "info", "warning", "error", "critical",
                "exception", "debug", "setLevel", "addFilter", "warn"}
    # tensorpack/__init__.py has no __all__: its star import also gives the subpackages its imports bind
    # (STATICA_HACK and libinfo, its internals, left out)
    subpackages = {"utils", "dataflow", "models", "callbacks", "tfutils", "train", "input_source", "predict", "compat",
                   "graph_builder"}
    special = {"tensorpack": {"tfv1", *subpackages}, "tensorpack.compat": {"tfv1", "is_tfv2"},
               "tensorpack.utils.compatible_serialize": {"loads", "dumps"},
               "tensorpack.utils.naming": {"GLOBAL_STEP_INCR_OP_NAME", "MOVING_SUMMARY_OPS_KEY"}}
    if module in special:
        names = set(special[module])
    else:
        tree = _source(module)
        names = set(_literal_all(tree) or [])
        if not names and module not in _replaced.EXPOSES:
            names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)
                     and not n.name.startswith("_")}
    for sub in _replaced.EXPOSES.get(module, ()):
        names |= tensorpack_names(sub)
    return names


def test_the_mirror_has_every_required_module_path():
    assert not sorted(set(f"tensorpack.{m}" for m in REQUIRED) - set(MIRRORED))
    assert len(MIRRORED) >= 120


@pytest.mark.parametrize("module", MIRRORED)
def test_each_name_of_tensorpacks_module_is_provided_or_listed(module):
    """Its ``__all__`` is tensorpack's, but for the names that do not import (``_replaced.IMPORT_ERRORS``);
    the listed names in it are the stand-ins."""
    mirror = importlib.import_module(f"trainstack.{module}")
    provided = set(mirror.__all__)
    listed = set(_replaced.unprovided_names(module))
    stand_ins = set(_replaced.stand_in_names(module))
    expected = tensorpack_names(module)
    assert provided | listed == expected, (f"missing: {sorted(expected - provided - listed)}, "
                                           f"not tensorpack's: {sorted((provided | listed) - expected)}")
    assert provided & listed == stand_ins
    assert len(mirror.__all__) == len(provided)
    for name in mirror.__all__:
        obj = getattr(mirror, name)
        assert obj is not None
        if name in stand_ins:
            assert obj is _replaced.stand_in(_replaced.find(module, name)), name
        else:
            assert not _replaced.is_stand_in(obj), name


def _trainstack_objects() -> dict[str, list]:
    objects: dict[str, list] = {}
    for layer in LAYERS:
        mod = importlib.import_module(layer)
        for name in mod.__all__:
            objects.setdefault(name, []).append(getattr(mod, name))
    return objects


#: tensorpack's older names, each the trainstack object of its newer name
ALIASES = {"get_nr_gpu": "get_num_gpu", "BaseTowerContext": "TowerContext", "TowerFuncWrapper": "TowerFunc",
           "TowerTensorHandle": "TowerHandle", "TowerTensorHandles": "TowerHandles", "load_chkpt_vars": None,
           "save_chkpt_vars": None}


def _defined_in_this_layer(obj) -> bool:
    """A mirror module, or a function or class written in this layer's mirror of tensorpack's module."""
    where = getattr(obj, "__name__", "") if isinstance(obj, type(importlib)) else getattr(obj, "__module__", "")
    return where.startswith("trainstack.tensorpack.") and not where.startswith("trainstack.tensorpack.tf1")


def test_every_name_provided_is_trainstacks_own_object():
    """A re-export, never a look-alike: each object is the one a trainstack layer exports under that name
    (or its newer name), or this layer's own code in the mirror of tensorpack's module (a mirror module,
    tensorpack's pure-Python utilities, a stand-in)."""
    objects = _trainstack_objects()
    core = {"tensorpack.tfutils.tower": {"BaseTowerContext": importlib.import_module("trainstack.towers").TowerContext}}
    for module in MIRRORED:
        mirror = importlib.import_module(f"trainstack.{module}")
        for name in mirror.__all__:
            obj = getattr(mirror, name)
            if _defined_in_this_layer(obj) or obj is core.get(module, {}).get(name, object()):
                continue
            if not callable(obj) and not isinstance(obj, type(importlib)):  # data: utils.naming's, PALETTE_RGB
                assert module in ("tensorpack.utils.naming", "tensorpack.utils.palette"), f"trainstack.{module}.{name}"
                continue
            candidates = objects.get(ALIASES.get(name) or name, [])
            assert any(obj is o for o in candidates), f"trainstack.{module}.{name}"


def test_the_layers_own_versions_of_core_names_are_listed_and_exported_by_every_mirror():
    """The names this layer defines again over the core (``_replaced.SUBCLASSES``, ``_replaced.WRAPPERS``)
    are exactly those of ``trainstack.tensorpack.tf1`` that the core exports as other objects; each class is a
    subclass of the core's, and a mirror exporting the name exports this layer's object."""
    tf1 = importlib.import_module("trainstack.tensorpack.tf1")
    core = [importlib.import_module(m) for m in ("trainstack.towers", "trainstack.distributed")]
    redefined = {n: getattr(layer, n) for layer in core for n in layer.__all__
                 if n in tf1.__all__ and getattr(layer, n) is not getattr(tf1, n)}
    assert sorted(redefined) == sorted([*_replaced.SUBCLASSES, *_replaced.WRAPPERS])
    for name in _replaced.SUBCLASSES:
        assert issubclass(getattr(tf1, name), redefined[name]) and getattr(tf1, name) is not redefined[name], name
    for module in MIRRORED:
        mirror = importlib.import_module(f"trainstack.{module}")
        for name in set(mirror.__all__) & set(redefined):
            assert getattr(mirror, name) is getattr(tf1, name), f"trainstack.{module}.{name}"


@pytest.mark.parametrize("module", [m for m in MIRRORED if m.startswith(("tensorpack.dataflow", "tensorpack.utils"))])
def test_the_importable_tensorpack_modules_agree(module):
    """tensorpack.dataflow and tensorpack.utils import without TF1: their public names, as Python sees them
    (defined in the module itself, or a module), are all provided or listed."""
    try:
        real = importlib.import_module(module)
    except ModuleNotFoundError as e:  # tensorpack's augmentor modules import OpenCV
        pytest.skip(f"{module} needs {e.name}; the ast test covers it")
    public = [n for n in getattr(real, "__all__", None) or dir(real) if not n.startswith("_")]
    own = {n for n in public if n != "global_import"  # the helper of tensorpack's star-import loop
           and (getattr(getattr(real, n), "__module__", None) or getattr(getattr(real, n), "__name__", "")).startswith(module)}
    if module == "tensorpack.dataflow.imgaug" and not own:
        pytest.skip("tensorpack's imgaug exports nothing without OpenCV; the ast test covers it")
    mirror = importlib.import_module(f"trainstack.{module}")
    missing = own - set(mirror.__all__) - set(_replaced.unprovided_names(module))
    assert not missing


def test_top_level_star_import_brings_tensorpacks_names_and_module_names():
    namespace: dict = {}
    exec("from trainstack.tensorpack import *", namespace)
    for name in ["summary", "optimizer", "gradproc", "logger", "dataset", "imgaug", "tfv1", "ModelDesc",
                 "TrainConfig", "launch_train_with_config", "BatchData", "ClassificationError", "InferenceRunner",
                 "Conv2D", "argscope", "get_global_step_var", "SmartInit"]:
        assert name in namespace, name
    from trainstack.callbacks import add_moving_summary

    assert namespace["summary"].add_moving_summary is add_moving_summary
    assert "add_moving_summary" not in namespace  # tensorpack's top level has it as summary.add_moving_summary only
    assert namespace["dataset"].Mnist is importlib.import_module("trainstack.dataflow.dataset").Mnist


@pytest.mark.parametrize(("module", "name", "words"), [
    ("trainstack.tensorpack.tfutils.sesscreate", "NewSessionCreator", "RuntimeConfig"),
    ("trainstack.tensorpack.tfutils", "get_default_sess_config", "RuntimeConfig"),
    ("trainstack.tensorpack", "get_default_sess_config", "RuntimeConfig"),
    ("trainstack.tensorpack.train.trainers", "BytePSTrainer", "HorovodTrainer"),
    ("trainstack.tensorpack.callbacks.hooks", "CallbackToHook", "SessionRunHooks"),
])
def test_a_replaced_name_imports_and_its_call_names_what_to_use(module, name, words):
    namespace: dict = {}
    exec(f"from {module} import {name}", namespace)
    with pytest.raises(_replaced.ReplacedCallError, match=rf"^{name}\(\) is tensorpack's tensorpack\..*{name},.*{words}"):
        namespace[name]("any", "arguments")
    assert getattr(importlib.import_module(module), name) is namespace[name]


def test_contrib_keras_has_tensorpacks_names_from_the_tf1_room():
    namespace: dict = {}
    exec("from trainstack.tensorpack.contrib.keras import *", namespace)
    tf1 = importlib.import_module("trainstack.tensorpack.tf1")
    for name in ("KerasModel", "setup_keras_trainer", "KerasPhaseCallback"):
        assert namespace[name] is getattr(tf1, name)


def test_a_name_tensorpacks_module_never_had_is_an_attribute_error():
    import trainstack.tensorpack.tfutils as tfutils

    with pytest.raises(AttributeError):
        tfutils.NoSuchName
    assert not hasattr(tfutils, "NewSessionCreator_")
    with pytest.raises(ImportError, match="cannot import name"):  # tensorpack.tfutils does not expose sesscreate's
        exec("from trainstack.tensorpack.tfutils import NewSessionCreator", {})


def test_the_small_shims():
    import tensorflow as tf

    from trainstack.tensorpack.tfutils.common import get_tf_version_tuple
    from trainstack.tensorpack.utils import gpu, logger

    assert get_tf_version_tuple() == tuple(int(p) for p in tf.__version__.split(".")[:2])
    assert gpu.get_nr_gpu is gpu.get_num_gpu
    from trainstack.callbacks import get_logger_dir

    assert logger.LOG_DIR == get_logger_dir()
