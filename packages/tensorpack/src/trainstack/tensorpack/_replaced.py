"""The tensorpack 0.11 names that trainstack.tensorpack does not provide, and what to use instead.

One table for the mirror modules (their ``__getattr__`` raises an ImportError naming the replacement)
and for the port command's report. Keys are where tensorpack defines a name; ``EXPOSES`` says which
modules a tensorpack package star-imports, so that ``tensorpack.tfutils.NewSessionCreator`` is found
too, as in tensorpack. Names TensorFlow 2 makes meaningless name their replacement; the others say
that trainstack.tensorpack does not provide them yet.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["SUBCLASSES", "WRAPPERS", "NOT_YET", "REPLACED", "EXPOSES", "NotProvidedError", "find", "message", "unprovided_names", "unprovided"]

NOT_YET = "not provided yet by trainstack.tensorpack"

#: The names that are this layer's own subclasses of the core's classes of the same name
#: (``trainstack.tensorpack.tf1``): each overrides the core's hooks with the TF1 room, and the
#: trainers keep tensorpack 003's ``Trainer(config)`` forms. Every mirror module exporting one of
#: these names exports this layer's class, never the core's.
SUBCLASSES: tuple[str, ...] = (
    "TowerContext", "TowerFunc", "ModelDescBase", "ModelDesc", "TowerTrainer", "SingleCostTrainer", "SimpleTrainer",
    "QueueInputTrainer", "NoOpTrainer", "MultiGPUTrainerBase", "SyncMultiGPUTrainerReplicated",
    "SyncMultiGPUTrainerParameterServer", "AsyncMultiGPUTrainer", "HorovodTrainer", "DistributedTrainerReplicated",
    "DistributedTrainerParameterServer",
)
#: The functions of the same name as the core's that this layer wraps: ``SyncMultiGPUTrainer`` makes
#: this layer's trainer, ``apply_grad_processors`` also takes a TF1 optimizer (its Keras stand-in).
WRAPPERS: tuple[str, ...] = ("SyncMultiGPUTrainer", "apply_grad_processors")

#: tensorpack's name, where tensorpack defines it -> why it is missing, and what to use instead
REPLACED: dict[str, str] = {
    "tensorpack.callbacks.concurrency.StartProcOrThread":
        "not provided: start the process in a callback's _before_train",
    "tensorpack.callbacks.graph.DumpParamAsImage":
        "not provided: write images from a callback with self.trainer.monitors.put_image(name, array)",
    "tensorpack.callbacks.graph.DumpTensorAsImage":
        "not provided: write images from a callback with self.trainer.monitors.put_image(name, array)",
    "tensorpack.callbacks.hooks.CallbackToHook": "not provided: TensorFlow 2 has no SessionRunHooks",
    "tensorpack.callbacks.hooks.HookToCallback": "not provided: TensorFlow 2 has no SessionRunHooks",
    "tensorpack.callbacks.hooks.TFLocalCLIDebugHook": "not provided: TensorFlow 2 has no SessionRunHooks",
    "tensorpack.callbacks.inference_runner.InferenceRunnerBase": "not provided: subclass InferenceRunner",
    "tensorpack.callbacks.misc.InjectShell":
        "not provided: niche (shell commands / IPython on a file trigger); write a Callback",
    "tensorpack.callbacks.misc.SendStat":
        "not provided: niche (shell commands / IPython on a file trigger); write a Callback",
    "tensorpack.callbacks.monitor.CometMLMonitor": "not provided: write a MonitorBase subclass",
    "tensorpack.callbacks.monitor.SendMonitorData": "not provided: write a MonitorBase subclass",
    "tensorpack.callbacks.prof.GPUMemoryTracker": "replaced by PeakMemoryTracker",
    "tensorpack.callbacks.prof.HostMemoryTracker": "replaced by PeakMemoryTracker",
    "tensorpack.callbacks.steps.TensorPrinter": "replaced by ProcessTensors(names, fn) (e.g. fn=print) or DumpTensors",
    "tensorpack.compat.is_tfv2": "not provided: trainstack runs on TensorFlow 2 only (tf.__version__)",
    "tensorpack.contrib.keras.KerasModel": NOT_YET,
    "tensorpack.contrib.keras.setup_keras_trainer": NOT_YET,
    "tensorpack.dataflow.dataset.caltech101.Caltech101Silhouettes":
        "not provided: read them with a DataFlow of your own",
    "tensorpack.dataflow.dataset.ilsvrc.TinyImageNet": "not provided: read them with a DataFlow of your own",
    "tensorpack.dataflow.dataset.places.Places365Standard": "not provided: read them with a DataFlow of your own",
    "tensorpack.dataflow.imgaug.deform.GaussianDeform": NOT_YET,
    "tensorpack.dataflow.imgaug.deform.GaussianMap": NOT_YET,
    "tensorpack.dataflow.imgaug.deform.np_sample": NOT_YET,
    "tensorpack.dataflow.imgaug.external.Albumentations": NOT_YET,
    "tensorpack.dataflow.imgaug.external.IAAugmentor": NOT_YET,
    "tensorpack.graph_builder.utils.allreduce_grads":
        "not provided: the data-parallel trainers all-reduce the gradients themselves",
    "tensorpack.input_source.input_source.PlaceholderInput": "replaced by FeedInput (no placeholders in TF2)",
    "tensorpack.input_source.input_source.ZMQInput":
        "replaced by RemoteInput (+ serve_dataflow on the sender side), or MultiProcessInput",
    "tensorpack.input_source.input_source_base.remap_input_source":
        "not provided: map the dataflow (MapData) or the tensors in build_graph",
    "tensorpack.models.common.rename_tflayer_get_variable":
        "not provided: tf.layers does not exist in TensorFlow 2; use the layer functions",
    "tensorpack.models.regularize.regularize_cost_from_collection":
        "replaced by regularize_cost over the layer functions' variables, or sum(model.losses) of Keras layers made with kernel_regularizer=",
    "tensorpack.models.shape_utils.DynamicLazyAxis": NOT_YET,
    "tensorpack.models.shape_utils.StaticDynamicAxis": NOT_YET,
    "tensorpack.models.shape_utils.StaticDynamicShape": NOT_YET,
    "tensorpack.models.shape_utils.StaticLazyAxis": NOT_YET,
    "tensorpack.predict.base.PredictorBase": "not provided: predictors are plain callables",
    "tensorpack.predict.concurrency.MultiThreadAsyncPredictor":
        "not provided: batch the requests and call an OfflinePredictor",
    "tensorpack.predict.dataset.MultiProcessDatasetPredictor":
        "not provided: a TF2 process per predictor gains nothing over batching; use SimpleDatasetPredictor with BatchData",
    "tensorpack.predict.feedfree.FeedfreePredictor":
        "not provided: use InferenceRunner with a feedfree input, or a predictor on batches",
    "tensorpack.predict.multigpu.DataParallelOfflinePredictor":
        "replaced by trainer.get_predictors(...) (one per device) and DataParallelInferenceRunner",
    "tensorpack.predict.multigpu.MultiTowerOfflinePredictor":
        "replaced by trainer.get_predictors(...) (one per device) and DataParallelInferenceRunner",
    "tensorpack.tfutils.collect_env.collect_env_info":
        "not provided: use tf.sysconfig.get_build_info() and tf.__version__",
    "tensorpack.tfutils.collect_env.parse_TF_build_info": "not provided: use tf.sysconfig.get_build_info()",
    "tensorpack.tfutils.collection.backup_collection": "not provided: TF1 graph collections do not exist",
    "tensorpack.tfutils.collection.freeze_collection": "not provided: TF1 graph collections do not exist",
    "tensorpack.tfutils.collection.restore_collection": "not provided: TF1 graph collections do not exist",
    "tensorpack.tfutils.common.collect_env_info": "not provided: use tf.sysconfig.get_build_info() and tf.__version__",
    "tensorpack.tfutils.common.get_default_sess_config":
        "replaced by RuntimeConfig (threads, GPU memory growth, soft placement, XLA)",
    "tensorpack.tfutils.common.get_global_step_value":
        "replaced by trainer.global_step (self.global_step in callbacks)",
    "tensorpack.tfutils.dependency.dependency_of_fetches":
        "not provided: TensorFlow 2 has no session fetches; compute it in the step function",
    "tensorpack.tfutils.dependency.dependency_of_targets":
        "not provided: TensorFlow 2 has no session fetches; compute it in the step function",
    "tensorpack.tfutils.distributed.get_distributed_session_creator":
        "replaced by DistributedTrainerParameterServer / DistributedTrainerReplicated (trainstack.distributed): TensorFlow 2 has no sessions",
    "tensorpack.tfutils.gradproc.CheckGradient":
        "replaced by MapGradient(lambda g: tf.debugging.check_numerics(g, ...)) and CheckNumerics",
    "tensorpack.tfutils.gradproc.PrintGradient":
        "replaced by MapGradient(lambda g: tf.debugging.check_numerics(g, ...)) and CheckNumerics",
    "tensorpack.tfutils.model_utils.describe_trainable_vars": NOT_YET,
    "tensorpack.tfutils.model_utils.get_shape_str": NOT_YET,
    "tensorpack.tfutils.optimizer.AccumGradOptimizer": "replaced by the trainers' gradient_accumulation_steps",
    "tensorpack.tfutils.optimizer.PostProcessOptimizer": "replaced by apply_grad_processors / ProcessedOptimizer",
    "tensorpack.tfutils.optimizer.ProxyOptimizer": "replaced by apply_grad_processors / ProcessedOptimizer",
    "tensorpack.tfutils.optimizer.VariableAssignmentOptimizer":
        "replaced by apply_grad_processors / ProcessedOptimizer",
    "tensorpack.tfutils.scope_utils.cached_name_scope":
        "not provided: decorators over TF1 name scopes; use with tf.name_scope(name): in the function",
    "tensorpack.tfutils.scope_utils.under_name_scope":
        "not provided: decorators over TF1 name scopes; use with tf.name_scope(name): in the function",
    "tensorpack.tfutils.sesscreate.NewSessionCreator":
        "replaced by RuntimeConfig (trainstack.towers): TensorFlow 2 has no sessions",
    "tensorpack.tfutils.sesscreate.ReuseSessionCreator":
        "replaced by RuntimeConfig (trainstack.towers): TensorFlow 2 has no sessions",
    "tensorpack.tfutils.sesscreate.SessionCreatorAdapter":
        "replaced by RuntimeConfig (trainstack.towers): TensorFlow 2 has no sessions",
    "tensorpack.tfutils.summary.add_activation_summary":
        "replaced by add_tensor_summary(x, ['histogram', 'rms', 'sparsity'])",
    "tensorpack.tfutils.symbolic_functions.print_stat":
        "replaced by add_tensor_summary(x, ['mean', 'rms']) or tf.print",
    "tensorpack.tfutils.symbolic_functions.rms": NOT_YET,
    "tensorpack.tfutils.tower.BaseTowerContext": "replaced by TowerContext",
    "tensorpack.tfutils.tower.TowerFuncWrapper": "replaced by TowerFunc",
    "tensorpack.tfutils.tower.TowerTensorHandle":
        "renamed TowerHandle (trainstack.towers; tower_func.towers[name].get_tensor(...))",
    "tensorpack.tfutils.tower.TowerTensorHandles": "renamed TowerHandles (trainstack.towers)",
    "tensorpack.tfutils.varmanip.SessionUpdate":
        "replaced by tf.train.Checkpoint / tf.train.load_checkpoint(path) and DictRestore",
    "tensorpack.tfutils.varmanip.dump_session_params":
        "replaced by tf.train.Checkpoint / tf.train.load_checkpoint(path) and DictRestore",
    "tensorpack.tfutils.varmanip.get_all_checkpoints":
        "replaced by tf.train.Checkpoint / tf.train.load_checkpoint(path) and DictRestore",
    "tensorpack.tfutils.varmanip.get_checkpoint_path":
        "replaced by tf.train.Checkpoint / tf.train.load_checkpoint(path) and DictRestore",
    "tensorpack.tfutils.varmanip.load_checkpoint_vars":
        "replaced by tf.train.Checkpoint / tf.train.load_checkpoint(path) and DictRestore",
    "tensorpack.tfutils.varmanip.load_chkpt_vars":
        "replaced by tf.train.Checkpoint / tf.train.load_checkpoint(path) and DictRestore",
    "tensorpack.tfutils.varmanip.save_checkpoint_vars":
        "replaced by tf.train.Checkpoint / tf.train.load_checkpoint(path) and DictRestore",
    "tensorpack.tfutils.varmanip.save_chkpt_vars":
        "replaced by tf.train.Checkpoint / tf.train.load_checkpoint(path) and DictRestore",
    "tensorpack.train.trainers.BytePSTrainer":
        "not provided: BytePS has no release for TensorFlow 2.21; use HorovodTrainer",
    "tensorpack.utils.argtools.graph_memoized":
        "not provided: it memoizes per TF1 graph, which TensorFlow 2 does not have; use memoized",
    "tensorpack.utils.argtools.log_once": NOT_YET,
    "tensorpack.utils.argtools.map_arg": NOT_YET,
    "tensorpack.utils.argtools.memoized_ignoreargs": NOT_YET,
    "tensorpack.utils.argtools.shape2d": NOT_YET,
    "tensorpack.utils.argtools.shape4d": NOT_YET,
    "tensorpack.utils.compatible_serialize.dumps": NOT_YET,
    "tensorpack.utils.compatible_serialize.loads": NOT_YET,
    "tensorpack.utils.concurrency.LoopThread": NOT_YET,
    "tensorpack.utils.concurrency.ShareSessionThread":
        "not provided: TensorFlow 2 has no default session to share; use a plain threading.Thread",
    "tensorpack.utils.concurrency.StoppableThread": NOT_YET,
    "tensorpack.utils.concurrency.ensure_proc_terminate": NOT_YET,
    "tensorpack.utils.concurrency.start_proc_mask_signal": NOT_YET,
    "tensorpack.utils.debug.enable_call_trace": NOT_YET,
    "tensorpack.utils.develop.HIDE_DOC": NOT_YET,
    "tensorpack.utils.develop.LazyLoader": NOT_YET,
    "tensorpack.utils.develop.building_rtfd": NOT_YET,
    "tensorpack.utils.develop.create_dummy_class": NOT_YET,
    "tensorpack.utils.develop.create_dummy_func": NOT_YET,
    "tensorpack.utils.develop.deprecated": NOT_YET,
    "tensorpack.utils.develop.log_deprecated": NOT_YET,
    "tensorpack.utils.fs.download":
        "not provided: trainstack.dataflow.dataset.download(RemoteFile(...), directory) downloads and checks a file",
    "tensorpack.utils.fs.get_dataset_path": NOT_YET,
    "tensorpack.utils.fs.mkdir_p": NOT_YET,
    "tensorpack.utils.fs.normpath": NOT_YET,
    "tensorpack.utils.fs.recursive_walk": NOT_YET,
    "tensorpack.utils.gpu.change_gpu": NOT_YET,
    "tensorpack.utils.loadcaffe.get_caffe_pb": NOT_YET,
    "tensorpack.utils.loadcaffe.load_caffe": NOT_YET,
    "tensorpack.utils.naming.GLOBAL_STEP_INCR_OP_NAME":
        "not provided: the loop counts the steps (trainer.global_step); there is no increment op",
    "tensorpack.utils.naming.MOVING_SUMMARY_OPS_KEY":
        "not provided: TF1 graph collections do not exist; add_moving_summary records on the tower",
    "tensorpack.utils.nvml.NVMLContext": NOT_YET,
    "tensorpack.utils.palette.PALETTE_RGB": NOT_YET,
    "tensorpack.utils.serialize.dumps": NOT_YET,
    "tensorpack.utils.serialize.loads": NOT_YET,
    "tensorpack.utils.stats.Accuracy": NOT_YET,
    "tensorpack.utils.stats.BinaryStatistics": NOT_YET,
    "tensorpack.utils.stats.OnlineMoments": NOT_YET,
    "tensorpack.utils.stats.RatioCounter": NOT_YET,
    "tensorpack.utils.stats.StatCounter": NOT_YET,
    "tensorpack.utils.timer.IterSpeedCounter": NOT_YET,
    "tensorpack.utils.timer.Timer": NOT_YET,
    "tensorpack.utils.timer.timed_operation": NOT_YET,
    "tensorpack.utils.utils.change_env": NOT_YET,
    "tensorpack.utils.utils.execute_only_once": NOT_YET,
    "tensorpack.utils.utils.get_tqdm": NOT_YET,
    "tensorpack.utils.utils.humanize_time_delta": NOT_YET,
    "tensorpack.utils.viz.dump_dataflow_images":
        "not provided: write the images with OpenCV in a loop over the dataflow; use a matplotlib colormap",
    "tensorpack.utils.viz.intensity_to_rgb":
        "not provided: write the images with OpenCV in a loop over the dataflow; use a matplotlib colormap",
}

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


def message(module: str, name: str) -> str | None:
    """What to tell a user who imports ``name`` from tensorpack's ``module``, or None if it is provided."""
    key = find(module, name)
    if key is None:
        return None
    return f"tensorpack's {key} is {REPLACED[key]}"


def unprovided(mirror: str, **dynamic: Callable[[], Any]) -> Callable[[str], Any]:
    """The ``__getattr__`` of the mirror module ``mirror`` (``trainstack.tensorpack.x`` for ``tensorpack.x``).

    ``dynamic`` maps module attributes that tensorpack kept as changing globals to a function
    reading their current value (``logger.LOG_DIR``).
    """
    module = mirror.removeprefix("trainstack.")

    def __getattr__(name: str) -> Any:
        if name in dynamic:
            return dynamic[name]()
        text = message(module, name)
        if text is None:
            raise AttributeError(f"module {mirror!r} has no attribute {name!r}")
        raise NotProvidedError(f"cannot import {name!r} from {mirror!r}: {text}", name=name, path=None)

    return __getattr__
