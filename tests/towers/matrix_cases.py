"""The data-parallel correctness matrix: every trainer x every input, through the public path.

Run in the worker process with 4 logical CPU devices (``multigpu_cases.device_pool``).
One case trains ``STEPS`` steps with ``launch_train_with_config`` (``dataflow=`` or
``data=``, the default callbacks) and checks the guarantee of DESIGN.md section 7:

- the weights after the steps equal plain SGD (an eager loop written here, not
  trainstack) where step ``s`` trains on batches ``s*K .. s*K+K-1`` of the
  dataflow concatenated (rtol 1e-5, atol 1e-6);
- the main tower (tower 0) of step ``s`` got batch ``s*K`` (fetched by a callback,
  whose values arrive as NumPy arrays);
- every datapoint of the ``STEPS*K`` batches was trained on exactly once (the
  model counts the ids it sees in a variable).

An input that cannot promise the order (MultiProcessInput with several workers)
is checked for the multiset only: every datapoint once.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np
from multigpu_cases import ATOL, RTOL, concat, make_batches, make_model, weights

STEPS, BATCH, LEARNING_RATE = 3, 4, 0.5
KEY = b"matrix"

#: trainer spec -> (class name in trainstack.towers, constructor keyword arguments)
TRAINERS = {
    "Simple": ("SimpleTrainer", {}),
    "Replicated": ("SyncMultiGPUTrainerReplicated", {}),
    "Replicated-hierarchical": ("SyncMultiGPUTrainerReplicated", {"mode": "hierarchical"}),
    "Replicated-collective": ("SyncMultiGPUTrainerReplicated", {"mode": "collective"}),
    "Replicated-gpu": ("SyncMultiGPUTrainerReplicated", {"mode": "gpu"}),
    "PS-cpu": ("SyncMultiGPUTrainerParameterServer", {"ps_device": "cpu"}),
    "PS-gpu": ("SyncMultiGPUTrainerParameterServer", {"ps_device": "gpu"}),
    "Async": ("AsyncMultiGPUTrainer", {}),
}

#: inputs whose order across a pass is not promised
UNORDERED = {"multiprocess"}

INPUTS = ["dataflow", "feed", "queue", "batchqueue", "dataset", "tensor", "staging-queue",
          "staging-batchqueue", "staging-dataset", "staging-tensor", "multiprocess", "remote"]


def make_trainer(spec: str, devices: list[str], **step_options: Any) -> Any:
    import trainstack.towers as towers

    name, kwargs = TRAINERS[spec]
    if name == "SimpleTrainer":
        return towers.SimpleTrainer(**step_options)
    return getattr(towers, name)(devices, **kwargs, **step_options)


class _Server:
    """A DataFlowServer on a free port of localhost, serving one client from a thread."""

    def __init__(self, dataflow: Any) -> None:
        from trainstack.inputs import DataFlowServer

        self.server = DataFlowServer(dataflow, ("127.0.0.1", 0), KEY)
        self.thread = threading.Thread(target=self.server.serve, args=(1,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.close()
        self.thread.join(10)


def make_input(kind: str, batches: list, closers: list) -> dict[str, Any]:
    """``{"dataflow": ...}`` or ``{"data": InputSource}`` for TrainConfig, serving ``batches``."""
    import tensorflow as tf

    from trainstack import inputs

    def dataset() -> Any:
        return tf.data.Dataset.from_tensor_slices(tuple(np.stack(part) for part in zip(*batches)))

    def tensors() -> Any:
        iterator = iter(dataset().repeat())
        return inputs.TensorInput(lambda: list(next(iterator)), size=len(batches))

    examples = [tuple(part[i] for part in batch) for batch in batches for i in range(len(batch[0]))]
    base = kind.removeprefix("staging-")
    if kind == "dataflow":
        return {"dataflow": batches}
    if base == "feed":
        source = inputs.FeedInput(batches)
    elif base == "queue":
        source = inputs.QueueInput(batches)
    elif base == "batchqueue":
        source = inputs.BatchQueueInput(examples, batch_size=BATCH)
    elif base == "dataset":
        source = inputs.TFDatasetInput(dataset())
    elif base == "tensor":
        source = tensors()
    elif base == "multiprocess":
        source = inputs.MultiProcessInput(batches, num_workers=2)
    elif base == "remote":
        server = _Server(batches)
        closers.append(server.close)
        source = inputs.RemoteInput(server.server.address, KEY, size=len(batches))
    else:
        raise ValueError(f"unknown input kind {kind!r}")
    if kind.startswith("staging-"):
        source = inputs.StagingInput(source)
    return {"data": source}


def sgd_reference(before: list[np.ndarray], step_batches: list[tuple], learning_rate: float) -> list[np.ndarray]:
    """Plain SGD on multigpu_cases' classifier (tanh Dense(6), Dense(2), mean cross-entropy),
    one step per batch of ``step_batches``, written without trainstack."""
    import tensorflow as tf

    variables = [tf.Variable(w) for w in before]
    w1, b1, w2, b2 = variables
    for x, label, *_ in step_batches:
        with tf.GradientTape() as tape:
            logits = tf.matmul(tf.tanh(tf.matmul(x, w1) + b1), w2) + b2
            cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits))
        for v, g in zip(variables, tape.gradient(cost, variables)):
            v.assign_sub(learning_rate * g)
    return [v.numpy() for v in variables]


def _recorder(model: Any) -> Any:
    from trainstack.loop import Callback

    class Recorder(Callback):
        """The weights before the first step; tower 0's ids at each step, and their type."""

        _chief_only = False  # every process of a distributed run records its own

        def __init__(self) -> None:
            self.before: list[np.ndarray] = []
            self.ids: list[np.ndarray] = []
            self.types: set[type] = set()

        def _before_train(self) -> None:
            self.before = weights(model)

        def _before_run(self, ctx: Any) -> list[str]:
            return ["ids"]

        def _after_run(self, ctx: Any, values: Any) -> None:
            self.types.add(type(values.results[0]))
            self.ids.append(values.results[0])

    return Recorder()


def fetched_batches(batches_per_step: int, offset: int, steps_per_run: int) -> list[int]:
    """The batch a callback's fetch sees at each call: that of the tower ``offset`` places into
    the last step of each call (``STEPS`` steps, in calls of ``steps_per_run``)."""
    last_steps = [min(s + steps_per_run, STEPS) - 1 for s in range(0, STEPS, steps_per_run)]
    return [s * batches_per_step + offset for s in last_steps]


def matrix_case(devices: list[str], trainer_spec: str, num_towers: int, input_kind: str,
                steps_per_run: int = 1, accumulate: int = 1) -> dict[str, Any]:
    """Train ``STEPS`` steps of ``trainer_spec`` on ``num_towers`` towers fed by ``input_kind``,
    ``steps_per_run`` steps per call, ``accumulate`` micro-batches per tower and step; check the
    guarantee (see the module docstring: a step trains on its ``num_towers * accumulate``
    batches concatenated; callbacks fetch from the last step of a call and from its last
    micro-batch); return what was measured."""
    from trainstack.towers import TrainConfig, launch_train_with_config

    k = num_towers * accumulate  # batches per step
    batches = make_batches(STEPS * k, batch=BATCH, seed=k, with_ids=True)
    model = make_model(learning_rate=LEARNING_RATE, with_ids=STEPS * k * BATCH)
    recorder = _recorder(model)
    closers: list = []
    try:
        config = TrainConfig(model=model, max_epoch=1, steps_per_epoch=STEPS, callbacks=[recorder],
                             monitors=[], **make_input(input_kind, batches, closers))
        trainer = make_trainer(trainer_spec, devices[:num_towers], steps_per_run=steps_per_run,
                               gradient_accumulation_steps=accumulate)
        assert getattr(trainer, "num_towers", 1) == num_towers, (trainer_spec, num_towers)
        launch_train_with_config(config, trainer)
    finally:
        for close in closers:
            close()
    assert trainer.global_step == STEPS
    # every datapoint of the STEPS * K batches reached exactly one tower, once
    seen = model.seen.numpy()
    assert seen.tolist() == [1] * len(seen), f"datapoints seen {seen.tolist()}, expected each once"
    assert recorder.types == {np.ndarray}, f"after_run values are {recorder.types}, expected NumPy"
    result = {"input": type(trainer.input).__name__}
    if input_kind in UNORDERED:
        return result
    first_ids = [int(ids[0]) // BATCH for ids in recorder.ids]
    expected_ids = fetched_batches(k, (accumulate - 1) * num_towers, steps_per_run)  # tower 0, last micro-batch
    assert first_ids == expected_ids, f"tower 0 trained on batches {first_ids}, expected {expected_ids}"
    expected = sgd_reference(recorder.before, [concat(batches[s * k:(s + 1) * k]) for s in range(STEPS)],
                             LEARNING_RATE)
    after = weights(model)
    diffs = [float(np.abs(a - e).max()) for a, e in zip(after, expected)]
    for a, e in zip(after, expected):
        np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL)
    result["max_abs_diff"] = max(diffs)
    return result
