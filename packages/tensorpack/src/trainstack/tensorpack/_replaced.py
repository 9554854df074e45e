"""The tensorpack 0.11 names that trainstack.tensorpack does not provide as tensorpack's, and what to use instead.

One table for the mirror modules and for the port command's report. Keys are where tensorpack defines a
name; ``EXPOSES`` says which modules a tensorpack package star-imports, so that
``tensorpack.tfutils.NewSessionCreator`` is found too, as in tensorpack. Each entry names why and what
to use instead. A listed name imports (a port changes its import lines only) as a stand-in whose call
raises :class:`ReplacedCallError` naming the call and the replacement; the names of ``IMPORT_ERRORS``
do not import at all (an ImportError naming the replacement).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["SUBCLASSES", "WRAPPERS", "NOT_YET", "REPLACED", "IMPORT_ERRORS", "EXPOSES", "NotProvidedError",
           "ReplacedCallError", "find", "message", "unprovided_names", "stand_in_names", "stand_in", "is_stand_in",
           "unprovided"]

NOT_YET = "not provided yet by trainstack.tensorpack"

#: The names that are this layer's own subclasses of the core's classes of the same name
#: (``trainstack.tensorpack.tf1``): each overrides the core's hooks with the TF1 room, and the
#: trainers keep tensorpack 003's ``Trainer(config)`` forms. Every mirror module exporting one of
#: these names exports this layer's class, never the core's.
SUBCLASSES: tuple[str, ...] = (
    "TowerContext", "TowerFunc", "ModelDescBase", "ModelDesc", "TowerTrainer", "SingleCostTrainer", "SimpleTrainer",
    "NoOpTrainer", "TrainConfig", "AutoResumeTrainConfig", "MultiGPUTrainerBase", "SyncMultiGPUTrainerReplicated",
    "SyncMultiGPUTrainerParameterServer", "AsyncMultiGPUTrainer", "HorovodTrainer", "DistributedTrainerReplicated",
    "DistributedTrainerParameterServer",
)
#: The functions of the same name as the core's that this layer wraps: ``apply_grad_processors`` also
#: takes a TF1 optimizer (its Keras stand-in).
WRAPPERS: tuple[str, ...] = ("apply_grad_processors",)

#: tensorpack's name, where tensorpack defines it -> why it is missing, and what to use instead
REPLACED: dict[str, str] = {
    "tensorpack.callbacks.hooks.CallbackToHook":
        "not provided: TensorFlow 2 runs no SessionRunHooks (tf.compat.v1.train.SessionRunHook runs only in a TF1 "
        "MonitoredSession, which the trainers do not use); write a Callback: before_run returns fetch names, "
        "after_run gets their values",
    "tensorpack.callbacks.hooks.HookToCallback":
        "not provided: TensorFlow 2 runs no SessionRunHooks (tf.compat.v1.train.SessionRunHook runs only in a TF1 "
        "MonitoredSession, which the trainers do not use); write a Callback: before_run returns fetch names, "
        "after_run gets their values",
    "tensorpack.callbacks.hooks.TFLocalCLIDebugHook":
        "not provided: it runs tfdbg's LocalCLIDebugHook, a TF1 SessionRunHook; TensorFlow 2 has neither: use "
        "tf.debugging.experimental.enable_dump_debug_info(logdir) and TensorBoard's Debugger V2",
    "tensorpack.callbacks.inference_runner.InferenceRunnerBase":
        "not provided: its protocol is TensorFlow 1's (register_hook of SessionRunHooks run in a HookedSession over "
        "trainer.sess); subclass InferenceRunner (trainstack.towers), whose trigger runs its Inferencers",
    "tensorpack.input_source.input_source.PlaceholderInput": "replaced by FeedInput (no placeholders in TF2)",
    "tensorpack.input_source.input_source.ZMQInput":
        "replaced by RemoteInput (+ serve_dataflow on the sender side), or MultiProcessInput",
    "tensorpack.models.regularize.regularize_cost_from_collection":
        "replaced by regularize_cost over the layer functions' variables, or sum(model.losses) of Keras layers "
        "made with kernel_regularizer= (it sums the REGULARIZATION_LOSSES collection, which TensorFlow 2 does not "
        "keep: the TF1 room refuses get_variable's and tf.layers' regularizer= arguments that filled it)",
    "tensorpack.tfutils.collection.backup_collection":
        "not provided: it saves and rewrites TF1 graph collections in place (get_collection_ref); TensorFlow 2 "
        "keeps none, and the TF1 room answers the variable collections from the model while a tower is traced, "
        "storing nothing to back up or freeze",
    "tensorpack.tfutils.collection.freeze_collection":
        "not provided: it saves and rewrites TF1 graph collections in place (get_collection_ref); TensorFlow 2 "
        "keeps none, and the TF1 room answers the variable collections from the model while a tower is traced, "
        "storing nothing to back up or freeze",
    "tensorpack.tfutils.collection.restore_collection":
        "not provided: it saves and rewrites TF1 graph collections in place (get_collection_ref); TensorFlow 2 "
        "keeps none, and the TF1 room answers the variable collections from the model while a tower is traced, "
        "storing nothing to back up or freeze",
    "tensorpack.tfutils.common.get_default_sess_config":
        "replaced by RuntimeConfig (threads, GPU memory growth, soft placement, XLA)",
    "tensorpack.tfutils.distributed.get_distributed_session_creator":
        "replaced by DistributedTrainerParameterServer / DistributedTrainerReplicated (trainstack.distributed): TensorFlow 2 has no sessions",
    "tensorpack.tfutils.sesscreate.NewSessionCreator":
        "replaced by RuntimeConfig (trainstack.towers): TensorFlow 2 has no sessions",
    "tensorpack.tfutils.sesscreate.ReuseSessionCreator":
        "replaced by RuntimeConfig (trainstack.towers): TensorFlow 2 has no sessions",
    "tensorpack.tfutils.sesscreate.SessionCreatorAdapter":
        "replaced by RuntimeConfig (trainstack.towers): TensorFlow 2 has no sessions",
    "tensorpack.tfutils.varmanip.SessionUpdate":
        "replaced by tf.Variable.assign and DictRestore / SmartInit (TensorFlow 2 has no sessions)",
    "tensorpack.tfutils.varmanip.dump_session_params":
        "replaced by save_chkpt_vars({v.name: v.numpy() for v in variables}, path) or ModelSaver (TensorFlow 2 has no sessions)",
    "tensorpack.train.trainers.BytePSTrainer":
        "not provided: BytePS has no release for TensorFlow 2.21; use HorovodTrainer",
    "tensorpack.utils.loadcaffe.get_caffe_pb":
        "not provided: it needs Caffe, or caffe.proto downloaded and compiled by protoc at run time; convert the model to .npz once with tensorpack 0.11 (python -m tensorpack.utils.loadcaffe PROTOTXT CAFFEMODEL OUT.npz) and load it with SmartInit / DictRestore",
    "tensorpack.utils.loadcaffe.load_caffe":
        "not provided: it needs Caffe, or caffe.proto downloaded and compiled by protoc at run time; convert the model to .npz once with tensorpack 0.11 (python -m tensorpack.utils.loadcaffe PROTOTXT CAFFEMODEL OUT.npz) and load it with SmartInit / DictRestore",
}

#: the entries of :data:`REPLACED` whose import raises (the others import as stand-ins)
IMPORT_ERRORS: frozenset[str] = frozenset()

#: the modules each tensorpack package star-imports (its __init__'s rule)
EXPOSES: dict[str, tuple[str, ...]] = {
    "tensorpack.callbacks": (
        "tensorpack.callbacks.base",
        "tensorpack.callbacks.concurrency",
        "tensorpack.callbacks.graph",
        "tensorpack.callbacks.group",
        "tensorpack.callbacks.hooks",
        "tensorpack.callbacks.inference",
        "tensorpack.callbacks.inference_runner",
        "tensorpack.callbacks.misc",
        "tensorpack.callbacks.monitor",
        "tensorpack.callbacks.param",
        "tensorpack.callbacks.prof",
        "tensorpack.callbacks.saver",
        "tensorpack.callbacks.stats",
        "tensorpack.callbacks.steps",
        "tensorpack.callbacks.summary",
        "tensorpack.callbacks.trigger",
    ),
    "tensorpack.models": (
        "tensorpack.models.batch_norm",
        "tensorpack.models.common",
        "tensorpack.models.conv2d",
        "tensorpack.models.fc",
        "tensorpack.models.layer_norm",
        "tensorpack.models.linearwrap",
        "tensorpack.models.nonlin",
        "tensorpack.models.pool",
        "tensorpack.models.regularize",
        "tensorpack.models.shape_utils",
        "tensorpack.models.shapes",
    ),
    "tensorpack.train": (
        "tensorpack.train.base",
        "tensorpack.train.config",
        "tensorpack.train.interface",
        "tensorpack.train.model_desc",
        "tensorpack.train.tower",
        "tensorpack.train.trainers",
    ),
    "tensorpack.input_source": (
        "tensorpack.input_source.input_source",
        "tensorpack.input_source.input_source_base",
    ),
    "tensorpack.predict": (
        "tensorpack.predict.base",
        "tensorpack.predict.concurrency",
        "tensorpack.predict.config",
        "tensorpack.predict.dataset",
        "tensorpack.predict.feedfree",
        "tensorpack.predict.multigpu",
    ),
    "tensorpack.graph_builder": (
        "tensorpack.graph_builder.model_desc",
        "tensorpack.graph_builder.training",
        "tensorpack.graph_builder.utils",
    ),
    "tensorpack.dataflow": (
        "tensorpack.dataflow.base",
        "tensorpack.dataflow.common",
        "tensorpack.dataflow.format",
        "tensorpack.dataflow.image",
        "tensorpack.dataflow.parallel",
        "tensorpack.dataflow.parallel_map",
        "tensorpack.dataflow.raw",
        "tensorpack.dataflow.remote",
        "tensorpack.dataflow.serialize",
    ),
    "tensorpack.dataflow.dataset": (
        "tensorpack.dataflow.dataset.bsds500",
        "tensorpack.dataflow.dataset.caltech101",
        "tensorpack.dataflow.dataset.cifar",
        "tensorpack.dataflow.dataset.ilsvrc",
        "tensorpack.dataflow.dataset.mnist",
        "tensorpack.dataflow.dataset.places",
        "tensorpack.dataflow.dataset.svhn",
    ),
    "tensorpack.dataflow.imgaug": (
        "tensorpack.dataflow.imgaug.base",
        "tensorpack.dataflow.imgaug.convert",
        "tensorpack.dataflow.imgaug.crop",
        "tensorpack.dataflow.imgaug.deform",
        "tensorpack.dataflow.imgaug.external",
        "tensorpack.dataflow.imgaug.geometry",
        "tensorpack.dataflow.imgaug.imgproc",
        "tensorpack.dataflow.imgaug.meta",
        "tensorpack.dataflow.imgaug.misc",
        "tensorpack.dataflow.imgaug.noise",
        "tensorpack.dataflow.imgaug.paste",
        "tensorpack.dataflow.imgaug.transform",
    ),
    "tensorpack.tfutils": (
        "tensorpack.tfutils.common",
        "tensorpack.tfutils.sessinit",
        "tensorpack.tfutils.argscope",
    ),
    "tensorpack.utils": (
        "tensorpack.utils.utils",
    ),
    "tensorpack": (
        "tensorpack.utils",
        "tensorpack.dataflow",
        "tensorpack.models",
        "tensorpack.callbacks",
        "tensorpack.tfutils",
        "tensorpack.train",
        "tensorpack.input_source",
        "tensorpack.predict",
    ),
}


class NotProvidedError(ImportError):
    """A tensorpack name that trainstack.tensorpack does not provide; the message says what to use.

    An ImportError, so that ``from m import name`` shows this message (Python turns an
    AttributeError there into its own "cannot import name"); ``m.name`` raises it too.
    """


class ReplacedCallError(NotImplementedError):
    """A call of a tensorpack name that TensorFlow 2 (or trainstack) replaces; the message names the
    call and what to use instead."""


def _exposed(module: str) -> list[str]:
    """``module`` and, recursively, the modules it star-imports in tensorpack."""
    out = [module]
    for sub in EXPOSES.get(module, ()):
        out += _exposed(sub)
    return out


def find(module: str, name: str) -> str | None:
    """The key in :data:`REPLACED` of ``name`` imported from tensorpack's ``module``, or None."""
    for where in reversed(_exposed(module)):  # the last star import wins, as in tensorpack
        if f"{where}.{name}" in REPLACED:
            return f"{where}.{name}"
    return None


def unprovided_names(module: str) -> list[str]:
    """The names of tensorpack's ``module`` that are in :data:`REPLACED`."""
    exposed = set(_exposed(module))
    return sorted({key.rsplit(".", 1)[1] for key in REPLACED if key.rsplit(".", 1)[0] in exposed})


def stand_in_names(module: str) -> list[str]:
    """The names of tensorpack's ``module`` (or of its mirror, ``trainstack.<module>``) in :data:`REPLACED`
    that import as stand-ins (not in :data:`IMPORT_ERRORS`): its ``__all__`` has them, as tensorpack's had."""
    module = module.removeprefix("trainstack.")
    return [n for n in unprovided_names(module) if find(module, n) not in IMPORT_ERRORS]


def message(module: str, name: str) -> str | None:
    """What to tell a user who imports ``name`` from tensorpack's ``module``, or None if it is provided."""
    key = find(module, name)
    if key is None:
        return None
    return f"tensorpack's {key} is {REPLACED[key]}"


_STAND_INS: dict[str, Any] = {}


def stand_in(key: str) -> Any:
    """The object standing for the :data:`REPLACED` entry ``key``: a class (for a capitalized name) or a
    function whose call raises :class:`ReplacedCallError` naming the call and the replacement."""
    if key in _STAND_INS:
        return _STAND_INS[key]
    module, name = key.rsplit(".", 1)
    text = f"{name}() is tensorpack's {key}, {REPLACED[key]}"
    if name[:1].isupper():
        def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
            raise ReplacedCallError(text.replace(f"{name}()", f"{cls.__name__}()", 1))

        obj: Any = type(name, (), {"__new__": __new__, "__doc__": f"A stand-in: {text}.",
                                   "__module__": f"trainstack.{module}"})
    else:
        def obj(*args: Any, **kwargs: Any) -> Any:
            raise ReplacedCallError(text)

        obj.__name__ = obj.__qualname__ = name
        obj.__doc__ = f"A stand-in: {text}."
        obj.__module__ = f"trainstack.{module}"
    obj.__replaced_key__ = key
    _STAND_INS[key] = obj
    return obj


def is_stand_in(obj: Any) -> bool:
    """Whether ``obj`` is the stand-in of a :data:`REPLACED` name (made by :func:`stand_in`)."""
    key = getattr(obj, "__replaced_key__", None)
    return isinstance(key, str) and _STAND_INS.get(key) is obj


def unprovided(mirror: str, **dynamic: Callable[[], Any]) -> Callable[[str], Any]:
    """The ``__getattr__`` of the mirror module ``mirror`` (``trainstack.tensorpack.x`` for ``tensorpack.x``):
    the stand-ins of its :data:`REPLACED` names, a :class:`NotProvidedError` for :data:`IMPORT_ERRORS`.

    ``dynamic`` maps module attributes that tensorpack kept as changing globals to a function
    reading their current value (``logger.LOG_DIR``).
    """
    module = mirror.removeprefix("trainstack.")

    def __getattr__(name: str) -> Any:
        if name in dynamic:
            return dynamic[name]()
        key = find(module, name)
        if key is None:
            raise AttributeError(f"module {mirror!r} has no attribute {name!r}")
        if key in IMPORT_ERRORS:
            raise NotProvidedError(f"cannot import {name!r} from {mirror!r}: {message(module, name)}",
                                   name=name, path=None)
        return stand_in(key)

    return __getattr__
