"""Every private TensorFlow and Keras API the core uses, wrapped once.

The core (callbacks, inputs, towers, distributed) reaches into TensorFlow's and Keras's
internals in a few places where the public API cannot do the job, or does it much slower.
Each such access is wrapped here, once, with what it is, why it is needed and the versions
it was checked with (:data:`CHECKED_WITH`); no other module of the core imports
``tensorflow.python`` or ``tensorflow.core`` or reads a private attribute of a TensorFlow
or Keras object. :data:`PRIVATE_APIS` lists them.

Why in ``trainstack.callbacks``: it is the lowest layer that imports TensorFlow, and a
layer imports only the layers below it, so this one module serves every layer above
(``trainstack.inputs``, ``trainstack.towers``, ``trainstack.distributed`` import it as
``trainstack.callbacks.tf_private``), and one test covers all of it.

A TensorFlow or Keras upgrade that removes or changes one of them is loud:

- where a public path exists, the wrapper falls back to it (slower, or less complete), and
  the fallback is counted (:func:`fallbacks_taken`) and logged once as a warning;
- where none exists, the wrapper raises :class:`PrivateAPIError`, naming the API;
- :func:`unavailable` probes every one of them now, so that the test suite
  (``tests/callbacks/test_tf_private.py``) fails on a version where any is gone, and the
  towers' tests assert that training takes no fallback.
"""
from __future__ import annotations

import collections
import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import tensorflow as tf

__all__ = ["CHECKED_WITH", "PrivateAPI", "PRIVATE_APIS", "PrivateAPIError", "fallbacks_taken",
           "reset_fallbacks", "unavailable", "eager_mode", "eager_execution_disabled", "new_async_executor",
           "executor_scope", "flat_caller", "eager_tensor_type", "new_host_tensor", "ensure_eager_context",
           "write_checkpoint_state", "new_trackable_object_graph", "Trackable", "AutoTrackable",
           "reinitialize_variable", "layer_seed_generators", "collective_all_reduce", "cross_device_ops_name",
           "distributed_container", "optimizer_strategy", "learning_rate_is_schedule", "convert_variables_to_constants",
           "optimize_for_inference"]

logger = logging.getLogger("trainstack.callbacks")

#: The TensorFlow and Keras versions every wrapper here was checked with.
CHECKED_WITH = "TensorFlow 2.21.0, Keras 3.15.1"


@dataclass(frozen=True)
class PrivateAPI:
    """One private access: ``name`` (what is reached), ``used_by`` (the module using it), ``why
    (what no public API gives), ``fallback`` (what happens without it; None: an error)."""

    name: str
    used_by: str
    why: str
    fallback: str | None


PRIVATE_APIS: dict[str, PrivateAPI] = {api.name: api for api in [
    PrivateAPI("tensorflow.python.eager.context.eager_mode", "tensorpack.tf1.eager",
               "leaves a graph a user made the default with Graph.as_default(): trainers train eagerly "
               "inside a TF1 script's `with tf.Graph().as_default():` block", None),
    PrivateAPI("tensorflow.python.eager.context.default_execution_mode", "towers.tower.eager",
               "tells tf.compat.v1.disable_eager_execution() from a graph block (tf.executing_eagerly() "
               "is False in both)", None),
    PrivateAPI("tensorflow.python.eager.executor.new_executor", "towers.tower.step",
               "an asynchronous executor of the step's own, so that a FeedInput prepares the next "
               "batch while the step computes", "the step runs synchronously (no overlap)"),
    PrivateAPI("tensorflow.python.eager.context.context().executor", "towers.tower.step",
               "runs one call on that executor (swapped in for the call, back at once)",
               "the step runs synchronously (no overlap)"),
    PrivateAPI("ConcreteFunction._call_flat", "towers.tower.step",
               "calls a traced step with its tensors flat, past the per-call matching of structured "
               "arguments (a third of a small model's step)", "the public call: slower"),
    PrivateAPI("tensorflow.python.framework.ops.EagerTensor", "inputs.host_tensor",
               "makes a fed array a host tensor without tf.convert_to_tensor's dispatch and device "
               "copy (~35 us per step on a small MLP)", "tf.convert_to_tensor: slower"),
    PrivateAPI("tensorflow.python.checkpoint.checkpoint_management.update_checkpoint_state_internal",
               "callbacks.checkpoint_files",
               "rewrites the checkpoint state file with relative paths and the files' times, as a "
               "CheckpointManager writes it", "tf.compat.v1.train.update_checkpoint_state with absolute "
               "paths (the directory can no longer be moved)"),
    PrivateAPI("tensorflow.core.protobuf.trackable_object_graph_pb2", "callbacks.checkpoint_layout",
               "parses a checkpoint's object graph, to pair its values with variables before restoring",
               None),
    PrivateAPI("tf.__internal__.tracking.Trackable / AutoTrackable", "callbacks.checkpoint_layout",
               "what tf.train.Checkpoint can save (checked up front), and stand-ins for skipped objects",
               None),
    PrivateAPI("keras.Variable._value / _initialize / _deferred_initialize", "towers.tower.keras_model",
               "re-creates a Keras model's existing variables, with their values, in a trainer's "
               "strategy or placement scope", None),
    PrivateAPI("keras.layers.Layer._flatten_layers / _seed_generators", "towers.tower.rng",
               "finds the SeedGenerators of a model's layers (dropout masks...), which Keras's "
               "checkpoint tracking does not reach, so that a resumed run draws the same numbers",
               "none found: the layers' random state is not checkpointed"),
    PrivateAPI("tensorflow.python.distribute.cross_device_ops.CollectiveAllReduce / "
               "cross_device_utils.CollectiveKeys", "towers.trainers.replicated",
               "SyncMultiGPUTrainerReplicated(mode='collective'): TensorFlow exports no constructor", None),
    PrivateAPI("MirroredStrategy.extended._cross_device_ops", "towers.trainers.replicated",
               "names the all-reduce in use in the set-up log line", "the log line names none"),
    PrivateAPI("Variable._distributed_container", "towers.trainers.replicated, distributed",
               "the distributed variable a per-device copy belongs to (Keras's optimizers hold the copies)",
               None),
    PrivateAPI("keras.optimizers.Optimizer._distribution_strategy",
               "towers.trainers (replicated, trainer), distributed.multiworker",
               "checks that a replicated trainer's optimizer was made in its strategy, and makes a "
               "LossScaleOptimizer in the strategy its optimizer was made in",
               "the check is skipped (an optimizer made outside the strategy fails later, less clearly)"),
    PrivateAPI("keras.optimizers.Optimizer._learning_rate", "distributed.elastic_callbacks",
               "tells a learning-rate schedule from a number or variable (optimizer.learning_rate "
               "evaluates the schedule)", "the optimizer's config"),
    PrivateAPI("tensorflow.python.framework.convert_to_constants.convert_variables_to_constants_v2",
               "tensorpack.tfutils.export", "ModelExporter.export_compact: a frozen GraphDef, as tensorpack's",
               None),
    PrivateAPI("tensorflow.python.tools.optimize_for_inference_lib", "tensorpack.tfutils.export",
               "ModelExporter.export_compact(optimize=True)", None),
]}


class PrivateAPIError(RuntimeError):
    """A private TensorFlow or Keras API the core needs is missing or changed in this version."""

    def __init__(self, name: str, error: BaseException | str) -> None:
        api = PRIVATE_APIS[name]
        super().__init__(f"{name} is missing or changed in TensorFlow {tf.__version__} (trainstack was checked "
                         f"with {CHECKED_WITH}): {error}. trainstack uses it because it {api.why} "
                         f"({api.used_by}); use the TensorFlow version trainstack supports, or report this")


_fallbacks: collections.Counter[str] = collections.Counter()
_fallbacks_lock = threading.Lock()


def _fall_back(name: str, error: BaseException | str) -> None:
    """Count a fallback of ``name``; log it (a warning) the first time."""
    with _fallbacks_lock:
        _fallbacks[name] += 1
        first = _fallbacks[name] == 1
    if first:
        logger.warning("%s is missing or changed in TensorFlow %s (trainstack was checked with %s): %s. "
                       "Falling back: %s.", name, tf.__version__, CHECKED_WITH, error,
                       PRIVATE_APIS[name].fallback)


def fallbacks_taken() -> dict[str, int]:
    """How many times each private API was missing and its fallback taken, in this process."""
    with _fallbacks_lock:
        return dict(_fallbacks)


def reset_fallbacks() -> None:
    """Forget the fallbacks counted so far (tests)."""
    with _fallbacks_lock:
        _fallbacks.clear()


# -- eager execution -------------------------------------------------------------------------------
def _eager_context_module() -> Any:
    from tensorflow.python.eager import context  # noqa: PLC0415

    return context


def eager_mode() -> contextlib.AbstractContextManager[None]:
    """TensorFlow's own switch into eager mode (what tf.function's callers use): the only way
    out of a graph made the default with ``Graph.as_default()``."""
    try:
        return _eager_context_module().eager_mode()
    except (ImportError, AttributeError) as e:
        raise PrivateAPIError("tensorflow.python.eager.context.eager_mode", e) from e


def eager_execution_disabled() -> bool:
    """Whether ``tf.compat.v1.disable_eager_execution()`` turned eager execution off for the process."""
    try:
        context = _eager_context_module()
        return bool(context.default_execution_mode != context.EAGER_MODE)
    except (ImportError, AttributeError) as e:
        raise PrivateAPIError("tensorflow.python.eager.context.default_execution_mode", e) from e


def new_async_executor() -> Any | None:
    """A new asynchronous eager executor (its own thread), or None where TensorFlow has none
    (a counted fallback: the caller then runs synchronously)."""
    try:
        from tensorflow.python.eager import executor  # noqa: PLC0415

        return executor.new_executor(enable_async=True)
    except (ImportError, AttributeError) as e:
        _fall_back("tensorflow.python.eager.executor.new_executor", e)
        return None


@contextlib.contextmanager
def executor_scope(executor: Any) -> Iterator[None]:
    """Run this thread's eager calls in the block on ``executor`` (from :func:`new_async_executor`);
    the thread's own executor is back when the block ends."""
    context = _eager_context_module().context()
    try:
        previous = context.executor
    except AttributeError as e:
        raise PrivateAPIError("tensorflow.python.eager.context.context().executor", e) from e
    context.executor = executor
    try:
        yield
    finally:
        context.executor = previous


def flat_caller(concrete: Any) -> Callable[[Sequence[Any]], Any] | None:
    """A function calling the traced ``concrete`` function with its arguments as one flat list of
    tensors (its captured inputs added), or None where it has no ``_call_flat`` (a counted
    fallback: call it the public way)."""
    call_flat = getattr(concrete, "_call_flat", None)
    if call_flat is None:
        _fall_back("ConcreteFunction._call_flat", f"{type(concrete).__name__} has no _call_flat")
        return None
    captured = concrete.captured_inputs
    return lambda args: call_flat(list(args), captured)


# -- host tensors ----------------------------------------------------------------------------------
def eager_tensor_type() -> type | None:
    """TensorFlow's ``EagerTensor`` class, or None where it is not where it was (a counted fallback)."""
    try:
        from tensorflow.python.framework.ops import EagerTensor  # noqa: PLC0415
    except ImportError as e:
        _fall_back("tensorflow.python.framework.ops.EagerTensor", e)
        return None
    return EagerTensor


def new_host_tensor(eager_tensor: type, array: Any, dtype: tf.DType) -> tf.Tensor:
    """``EagerTensor(array, None, dtype)``: a host tensor made with no device named, which copies
    ``array`` unless TensorFlow wraps it in place (see ``trainstack.inputs.host_tensor``)."""
    return eager_tensor(array, None, dtype.as_datatype_enum)


def ensure_eager_context() -> None:
    """Initialize the eager context (which :func:`new_host_tensor` does not)."""
    _eager_context_module().context().ensure_initialized()


# -- checkpoints -----------------------------------------------------------------------------------
def write_checkpoint_state(directory: str, latest: str, kept: Sequence[str], times: Sequence[float],
                           last_preserved: float) -> None:
    """Write ``directory``'s checkpoint state file as a CheckpointManager does: ``latest`` and the
    ``kept`` prefixes (relative to ``directory``, oldest first) with their ``times``. The file is
    replaced atomically."""
    try:
        from tensorflow.python.checkpoint import checkpoint_management  # noqa: PLC0415

        update = checkpoint_management.update_checkpoint_state_internal
    except (ImportError, AttributeError) as e:
        _fall_back("tensorflow.python.checkpoint.checkpoint_management.update_checkpoint_state_internal", e)
        absolute = os.path.abspath(directory)
        tf.compat.v1.train.update_checkpoint_state(
            absolute, os.path.join(absolute, latest), [os.path.join(absolute, p) for p in kept],
            all_model_checkpoint_timestamps=list(times), last_preserved_timestamp=last_preserved)
        return
    update(directory, model_checkpoint_path=latest, all_model_checkpoint_paths=list(kept),
           save_relative_paths=True, all_model_checkpoint_timestamps=list(times),
           last_preserved_timestamp=last_preserved)


def new_trackable_object_graph() -> Any:
    """An empty ``TrackableObjectGraph`` proto (a checkpoint's object graph parses into it)."""
    try:
        from tensorflow.core.protobuf import trackable_object_graph_pb2  # noqa: PLC0415
    except ImportError as e:
        raise PrivateAPIError("tensorflow.core.protobuf.trackable_object_graph_pb2", e) from e
    return trackable_object_graph_pb2.TrackableObjectGraph()


def _tracking(name: str) -> Any:
    try:
        return getattr(tf.__internal__.tracking, name)
    except AttributeError as e:
        raise PrivateAPIError("tf.__internal__.tracking.Trackable / AutoTrackable", e) from e


#: The base class of what ``tf.train.Checkpoint`` can save (variables, modules, Keras objects).
Trackable: type = _tracking("Trackable")
#: A trackable whose attributes are its children (a checkpoint's stand-in for an object).
AutoTrackable: type = _tracking("AutoTrackable")


# -- Keras -----------------------------------------------------------------------------------------
def reinitialize_variable(variable: Any) -> None:
    """Make a Keras variable's TensorFlow variable again, with its value (or its deferred
    initializer), in the current scope (a strategy's, a device placement)."""
    try:
        if getattr(variable, "_value", None) is None:  # deferred by a symbolic call
            variable._deferred_initialize()
        else:
            import numpy as np  # noqa: PLC0415

            value = np.array(variable._value.numpy())
            variable._initialize(lambda value=value: value)
    except AttributeError as e:
        raise PrivateAPIError("keras.Variable._value / _initialize / _deferred_initialize", e) from e


def layer_seed_generators(layer: Any) -> list[Any]:
    """The ``keras.random.SeedGenerator``\\ s of ``layer`` and its sub-layers, in layer order; none
    where Keras no longer has them where they were (a counted fallback)."""
    flatten = getattr(layer, "_flatten_layers", None)
    if flatten is None:
        _fall_back("keras.layers.Layer._flatten_layers / _seed_generators",
                   f"{type(layer).__name__} has no _flatten_layers")
        return []
    found = []
    for sub in flatten(include_self=True, recursive=True):
        generators = getattr(sub, "_seed_generators", None)
        if generators is None:
            _fall_back("keras.layers.Layer._flatten_layers / _seed_generators",
                       f"{type(sub).__name__} has no _seed_generators")
            continue
        found.extend(generators)
    return found


def optimizer_strategy(optimizer: Any) -> tf.distribute.Strategy | None:
    """The ``tf.distribute`` strategy a Keras optimizer was made under (the default strategy
    outside any scope); None where the optimizer does not say (a counted fallback: the callers'
    checks of it are skipped)."""
    strategy = getattr(optimizer, "_distribution_strategy", None)
    if strategy is None:
        _fall_back("keras.optimizers.Optimizer._distribution_strategy",
                   f"{type(optimizer).__name__} has no _distribution_strategy")
    return strategy


def learning_rate_is_schedule(optimizer: Any) -> bool:
    """Whether a Keras optimizer's learning rate is a schedule (not a number or a variable)."""
    if hasattr(optimizer, "_learning_rate"):
        return callable(optimizer._learning_rate)
    _fall_back("keras.optimizers.Optimizer._learning_rate", f"{type(optimizer).__name__} has no _learning_rate")
    return isinstance(optimizer.get_config().get("learning_rate"), dict)  # a serialized schedule


# -- tf.distribute ---------------------------------------------------------------------------------
_collective_keys: Any = None
_collective_keys_lock = threading.Lock()


def collective_all_reduce(devices: Sequence[str]) -> tf.distribute.CrossDeviceOps:
    """The collective all-reduce MultiWorkerMirroredStrategy uses, on ``devices`` of this process.

    One key allocator serves the whole process: each CollectiveAllReduce would otherwise number
    its device group 1, and a second trainer on another set of devices would join the first
    one's group (TensorFlow: "joining a group with size 4, but that group has size 2")."""
    global _collective_keys
    name = ("tensorflow.python.distribute.cross_device_ops.CollectiveAllReduce / "
            "cross_device_utils.CollectiveKeys")
    try:
        from tensorflow.python.distribute import cross_device_ops, cross_device_utils  # noqa: PLC0415

        with _collective_keys_lock:
            if _collective_keys is None:
                _collective_keys = cross_device_utils.CollectiveKeys()
        return cross_device_ops.CollectiveAllReduce(
            devices=list(devices), group_size=len(devices),
            options=tf.distribute.experimental.CommunicationOptions(), collective_keys=_collective_keys)
    except (ImportError, AttributeError, TypeError) as e:
        raise PrivateAPIError(name, e) from e


def cross_device_ops_name(strategy: tf.distribute.Strategy) -> str:
    """The class name of the all-reduce ``strategy`` uses ("?" where it cannot be read)."""
    ops = getattr(strategy.extended, "_cross_device_ops", None)
    if ops is None:
        _fall_back("MirroredStrategy.extended._cross_device_ops", "not found on the strategy")
        return "?"
    return type(ops).__name__


def distributed_container(variable: Any) -> Any:
    """The distributed variable a per-device copy belongs to (the variable itself otherwise)."""
    container = getattr(variable, "_distributed_container", None)
    return container() if callable(container) else variable


# -- export ----------------------------------------------------------------------------------------
def convert_variables_to_constants(concrete: Any) -> Any:
    """``concrete`` (a ConcreteFunction) with its variables made constants: a frozen graph."""
    name = "tensorflow.python.framework.convert_to_constants.convert_variables_to_constants_v2"
    try:
        from tensorflow.python.framework.convert_to_constants import (  # noqa: PLC0415
            convert_variables_to_constants_v2,
        )
    except ImportError as e:
        raise PrivateAPIError(name, e) from e
    return convert_variables_to_constants_v2(concrete)


def optimize_for_inference(graph_def: Any, inputs: list[str], outputs: list[str], dtypes: list[int],
                           toco_compatible: bool) -> Any:
    """TensorFlow's ``optimize_for_inference`` over a frozen ``graph_def``."""
    try:
        from tensorflow.python.tools import optimize_for_inference_lib  # noqa: PLC0415
    except ImportError as e:
        raise PrivateAPIError("tensorflow.python.tools.optimize_for_inference_lib", e) from e
    return optimize_for_inference_lib.optimize_for_inference(graph_def, inputs, outputs, dtypes, toco_compatible)


# -- the probe -------------------------------------------------------------------------------------
def _probe_keras() -> None:
    import keras  # noqa: PLC0415

    layer = keras.layers.Dropout(0.5)
    assert hasattr(layer, "_flatten_layers") and hasattr(layer, "_seed_generators"), "no _flatten_layers"
    assert len(layer_seed_generators(layer)) == 1, "Dropout's SeedGenerator not found"
    variable = keras.Variable(1.0)
    assert all(hasattr(variable, a) for a in ("_value", "_initialize", "_deferred_initialize")), \
        "keras.Variable lacks _value/_initialize/_deferred_initialize"
    optimizer = keras.optimizers.SGD(keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5))
    assert hasattr(optimizer, "_learning_rate") and learning_rate_is_schedule(optimizer), "no _learning_rate"
    assert hasattr(optimizer, "_distribution_strategy"), "no _distribution_strategy"


def _probe_step() -> None:
    fn = tf.function(lambda x: x + 1.0).get_concrete_function(tf.TensorSpec([], tf.float32))
    caller = flat_caller(fn)
    assert caller is not None and float(caller([tf.constant(1.0)])) == 2.0, "_call_flat gave another result"
    executor = new_async_executor()
    assert executor is not None, "no asynchronous executor"
    with executor_scope(executor):
        result = tf.constant(1.0) + 1.0
    executor.wait()
    assert float(result) == 2.0
    eager = eager_tensor_type()
    assert eager is not None and type(tf.constant(1.0)) is eager, "EagerTensor is not tf.constant's type"
    ensure_eager_context()
    import numpy as np  # noqa: PLC0415

    assert new_host_tensor(eager, np.ones(3, np.float32), tf.float32).numpy().tolist() == [1.0] * 3


def _probe_distribute() -> None:
    from tensorflow.python.distribute import cross_device_ops, cross_device_utils  # noqa: PLC0415, F401

    assert hasattr(cross_device_ops, "CollectiveAllReduce") and hasattr(cross_device_utils, "CollectiveKeys")
    assert hasattr(tf.distribute.MirroredStrategy(["/cpu:0"]).extended, "_cross_device_ops")


def _probe_modules() -> None:
    from tensorflow.python.checkpoint import checkpoint_management  # noqa: PLC0415
    from tensorflow.python.tools import optimize_for_inference_lib  # noqa: PLC0415

    assert callable(checkpoint_management.update_checkpoint_state_internal)
    assert callable(optimize_for_inference_lib.optimize_for_inference)
    from tensorflow.python.framework import convert_to_constants  # noqa: PLC0415

    assert callable(convert_to_constants.convert_variables_to_constants_v2)
    new_trackable_object_graph()
    context = _eager_context_module()
    assert callable(context.eager_mode) and hasattr(context, "default_execution_mode")


def unavailable(*, distribute: bool = True) -> dict[str, str]:
    """Probe every private API now: {probe: what is wrong} for those missing or changed in this
    TensorFlow and Keras, empty when all are there. ``distribute=False`` skips the probe that
    makes a (one-device) MirroredStrategy. Probing takes no fallback: the count is as before."""
    before = fallbacks_taken()
    problems: dict[str, str] = {}
    probes = {"eager, checkpoint and export modules": _probe_modules, "the step's fast paths": _probe_step,
              "Keras internals": _probe_keras}
    if distribute:
        probes["tf.distribute internals"] = _probe_distribute
    for what, probe in probes.items():
        try:
            probe()
        except Exception as e:  # noqa: BLE001 - every failure is the finding
            problems[what] = f"{type(e).__name__}: {e}"
    with _fallbacks_lock:
        _fallbacks.clear()
        _fallbacks.update(before)
    return problems
