"""tensorpack's ``examples/ImageNetModels`` (and ``examples/ResNet``'s ImageNet scripts), ported by the port
command and run as a user runs them, on a tiny folder in ILSVRC12's layout.

The scripts in ``tests/tensorpack/examples/ImageNetModels/`` are tensorpack's own, byte for byte, from
commit 1547a54 (``imagenet-resnet.py`` and ``resnet_model.py`` from ``examples/ResNet/``, where
``imagenet_utils.py`` is a link to ``ImageNetModels``'). The folder is ported as a whole (import lines
only) and each script runs in a subprocess, ``python SCRIPT --data DIR --batch 2 ...``, with
``run_example.py`` capping the training to 2 epochs of 2 steps. The data (``example_data.write_ilsvrc12``):
``train/<synset>/*.JPEG``, flat ``val/*.JPEG`` and caffe's meta files (``synsets.txt``, ``train.txt``,
``val.txt``, ...) under ``$TENSORPACK_DATASET/ilsvrc_metadata``, as ``dataset.ILSVRC12`` reads them; the
scripts' augmentors resize the small images to 224x224. What training did is read from ``stats.jsonl``
(the losses, ``train-error-top1``, the ``val-error-*`` of the validation inference ``imagenet_utils``'
callbacks run, the learning rate the schedule set) and the checkpoints; ``--eval`` runs
``imagenet_utils.eval_classification`` (a ``FeedfreePredictor`` over ``StagingInput(QueueInput(...))``)
on the trained checkpoint. ``vgg16.py`` and ``inception-bn.py`` stop where tensorpack's stop on one CPU.

The tests run in parallel under ``pytest -n``; the file took 92 s of CPU in all (81 s user, 11 s system),
so about 50 s on two free cores.
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_tensorpack_examples import assert_import_lines_only

from trainstack.tensorpack.port import main

HERE = Path(__file__).parent
FOLDER = HERE / "examples" / "ImageNetModels"
RUNNER = HERE / "run_example.py"
TIMEOUT = 300
EPOCHS, STEPS = 2, 2
VAL_IMAGES = 8


@pytest.fixture
def example(tmp_path):
    """The folder ported into ``tmp_path/ported`` and the data written under ``tmp_path/data``; returns
    ``run(script, *args, train=True)``, which runs the ported script in ``tmp_path`` and gives its
    return code and output."""
    import example_data
    ported = tmp_path / "ported"
    assert main([str(FOLDER), "--out", str(ported)]) == 0
    changed = {p.name: assert_import_lines_only(p.read_bytes(), (ported / p.name).read_bytes())
               for p in sorted(FOLDER.glob("*.py"))}
    assert all(changed.values()), changed
    data = example_data.write_ilsvrc12(str(tmp_path / "data"), val=VAL_IMAGES)

    def run(script: str, *args: str, train: bool = True) -> tuple[int, str]:
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="",
                   TENSORPACK_DATASET=str(tmp_path / "data"))
        env.pop("TRAINSTACK_DATASET", None)
        capped = [str(RUNNER), "--max-epoch", str(EPOCHS), "--steps-per-epoch", str(STEPS)] if train else []
        done = subprocess.run([sys.executable, *capped, str(ported / script), "--data", data, *args], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=TIMEOUT)
        return done.returncode, done.stdout + done.stderr

    return run


def stats(logdir: Path) -> list[dict]:
    """The rows of ``stats.jsonl`` after training began; asserts one per epoch."""
    rows = [json.loads(line) for line in (logdir / "stats.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r["global_step"] > 0]  # the schedule's value before training
    assert [(r["epoch_num"], r["global_step"]) for r in rows] == [(e, e * STEPS) for e in range(1, EPOCHS + 1)]
    return rows


def model_weights(checkpoint: Path) -> dict[str, np.ndarray]:
    """The model's variables in a checkpoint, by their TF1 names (``conv0/W``)."""
    import tensorflow as tf
    reader = tf.train.load_checkpoint(str(checkpoint))
    out = {}
    for key in reader.get_variable_to_shape_map():
        m = re.fullmatch(r"model/untracked/(.*)/\.ATTRIBUTES/VARIABLE_VALUE", key)
        if m:
            out[m.group(1).replace(".S", "/")] = reader.get_tensor(key)
    return out


def assert_trained(logdir: Path, rows: list[dict], loss: str, error: str, val_errors: tuple[str, str]) -> None:
    """What every training run must show: a finite loss that changed, the training error and the
    validation errors (multiples of 1/8 on the 8 validation images), the weights changed by the
    second epoch's steps."""
    losses = [r[loss] for r in rows]
    assert all(math.isfinite(v) for v in losses) and losses[0] != losses[-1], losses
    for r in rows:
        assert 0 <= r[error] <= 1, r
        for name in val_errors:
            assert r[name] * VAL_IMAGES == pytest.approx(round(r[name] * VAL_IMAGES)), r
    before, after = model_weights(logdir / f"model-{STEPS}"), model_weights(logdir / f"model-{EPOCHS * STEPS}")
    changed = [k for k in before if k.endswith("/W") and not np.array_equal(before[k], after[k])]
    assert changed == [k for k in before if k.endswith("/W")], sorted(set(before) - set(changed))


def eval_errors(output: str) -> tuple[float, float]:
    """The ``Top1 Error: ...`` and ``Top5 Error: ...`` lines ``eval_classification`` prints."""
    top1 = re.search(r"^Top1 Error: ([0-9.]+)$", output, re.M)
    top5 = re.search(r"^Top5 Error: ([0-9.]+)$", output, re.M)
    assert top1 and top5, output[-3000:]
    return float(top1.group(1)), float(top5.group(1))


def test_imagenet_resnet18_trains_validates_and_evaluates_its_checkpoint(example, tmp_path):
    code, out = example("imagenet-resnet.py", "-d", "18", "--batch", "2")
    assert code == 0, out[-5000:]
    logdir = tmp_path / "train_log" / "imagenet-resnet-d18-batch2"
    rows = stats(logdir)
    assert_trained(logdir, rows, "xentropy-loss", "train-error-top1", ("val-error-top1", "val-error-top5"))
    for r in rows:  # the schedule's first value, min(0.1, 0.1 * batch / 256), in the variable build_graph reads
        assert r["learning_rate-summary"] == pytest.approx(0.1 * 2 / 256, rel=1e-6)
        assert r["l2_regularize_loss"] > 0 and "train-error-top5" in r
    print(f"imagenet-resnet.py -d 18: xentropy-loss {rows[0]['xentropy-loss']:.4f} -> "
          f"{rows[-1]['xentropy-loss']:.4f}, val-error-top1 {rows[-1]['val-error-top1']}")

    code, out = example("imagenet-resnet.py", "-d", "18", "--eval", "--load", str(logdir / "checkpoint"),
                        train=False)
    assert code == 0, out[-5000:]
    # eval_classification's FeedfreePredictor on the last checkpoint: what the InferenceRunner measured
    # with the same weights after the last epoch
    assert eval_errors(out) == (pytest.approx(rows[-1]["val-error-top1"]), pytest.approx(rows[-1]["val-error-top5"]))
    assert "Restored" in out and "from checkpoint" in out


def test_shufflenet_trains_on_its_linear_schedule_and_evaluates_its_checkpoint(example, tmp_path):
    code, out = example("shufflenet.py", "--batch", "2")
    assert code == 0, out[-5000:]
    logdir = tmp_path / "train_log" / "ShuffleNetV1-0.5x-g8"
    rows = stats(logdir)
    assert_trained(logdir, rows, "xentropy-loss", "train-error-top1", ("val-error-top1", "val-error-top5"))
    for r in rows:  # ScheduledHyperParamSetter((0, 0.5), (300000, 0), interp='linear', step_based=True)
        assert r["learning_rate"] == pytest.approx(0.5 * (1 - r["global_step"] / 300000), rel=1e-7)
        assert r["learning_rate-summary"] == r["learning_rate"]
    print(f"shufflenet.py: xentropy-loss {rows[0]['xentropy-loss']:.1f} -> {rows[-1]['xentropy-loss']:.1f}, "
          f"val-error-top1 {rows[-1]['val-error-top1']}, top5 {rows[-1]['val-error-top5']}")

    code, out = example("shufflenet.py", "--eval", "--load", str(logdir / "checkpoint"), train=False)
    assert code == 0, out[-5000:]
    assert eval_errors(out) == (pytest.approx(rows[-1]["val-error-top1"]), pytest.approx(rows[-1]["val-error-top5"]))


def test_alexnet_trains_with_data_parallel_inference_and_leaves_its_aaa_summary_unwritten(example, tmp_path):
    code, out = example("alexnet.py", "--batch", "2")
    assert code == 0, out[-5000:]
    logdir = tmp_path / "train_log" / "AlexNet"
    rows = stats(logdir)
    assert_trained(logdir, rows, "xentropy-loss", "train-error-top1", ("val-error-top1", "val-error-top5"))
    for r in rows:  # the schedule's first value, 0.01 * batch / 128
        assert r["learning_rate-summary"] == pytest.approx(0.01 * 2 / 128, rel=1e-6)
    # tf.summary.image('visualize_conv1', ..., collections=['AAA']): outside TF1's summaries collection,
    # so never merged nor written, as in tensorpack
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    events = EventAccumulator(str(logdir), size_guidance={"images": 0})
    events.Reload()
    assert not [t for t in events.Tags()["images"] if "visualize_conv1" in t]
    assert "not written, as in TF1" in out
    print(f"alexnet.py: xentropy-loss {rows[0]['xentropy-loss']:.4f} -> {rows[-1]['xentropy-loss']:.4f}")


def test_vgg16_and_inception_bn_stop_where_tensorpack_stops_without_their_gpus(example):
    """vgg16.py asserts a total batch of at least 256 (224x224 images; more memory than this machine
    has on CPU), inception-bn.py six GPUs (its SyncMultiGPUTrainer(6)), as tensorpack's did."""
    code, out = example("vgg16.py", "--batch", "2")
    assert code != 0 and "assert total_batch >= 256" in out and "AssertionError" in out, out[-3000:]
    code, out = example("inception-bn.py")
    assert code != 0 and "assert nr_tower == NUM_GPU" in out and "AssertionError" in out, out[-3000:]


# -- what the scripts needed, in process ---------------------------------------------------------------
def _small_model():
    from trainstack.tensorpack import FullyConnected, ModelDesc, tfv1

    class Small(ModelDesc):
        def inputs(self):
            return [tfv1.TensorSpec([None, 3], tfv1.float32, "x"), tfv1.TensorSpec([None], tfv1.int32, "label")]

        def build_graph(self, x, label):
            logits = FullyConnected("fc", x, 4)
            tfv1.identity(tfv1.cast(tfv1.argmax(logits, 1), tfv1.int32) - label, name="diff")
            return tfv1.reduce_mean(logits, name="cost")

    return Small()


def test_feedfree_predictor_predicts_the_sources_batches_in_order_then_stops_it():
    """eval_classification's use: ``FeedfreePredictor(config, StagingInput(QueueInput(df), device='/gpu:0'))``
    called once per batch gives what an OfflinePredictor gives on the same arrays, batch after batch;
    ``close()`` stops the queue's thread."""
    from trainstack.tensorpack import (
        DataFromList,
        FeedfreePredictor,
        FeedInput,
        OfflinePredictor,
        PredictConfig,
        QueueInput,
        StagingInput,
    )

    rng = np.random.RandomState(0)
    batches = [[rng.randn(n, 3).astype("float32"), rng.randint(0, 4, size=n).astype("int32")] for n in (5, 5, 3)]
    config = PredictConfig(model=_small_model(), input_names=["x", "label"], output_names=["fc/output", "diff"])
    expected = OfflinePredictor(config)
    for make in (lambda df: QueueInput(df), lambda df: StagingInput(QueueInput(df), device="/gpu:0")):
        source = make(DataFromList(batches, shuffle=False))
        with FeedfreePredictor(config, source) as pred:
            for _ in range(2):  # the source streams pass after pass
                for x, label in batches:
                    got = pred()
                    for g, e in zip(got, expected(x, label)):
                        np.testing.assert_allclose(g, e, rtol=1e-6)
                    assert got[0].shape == (len(x), 4)
        queue = source.input if isinstance(source, StagingInput) else source
        assert queue._thread is None  # stopped by close()
        with pytest.raises(RuntimeError, match="after close"):
            pred()

    with pytest.raises(TypeError, match="OfflinePredictor"):
        FeedfreePredictor(config, FeedInput(DataFromList(batches)))
    with pytest.raises(ValueError, match="return_input"):
        FeedfreePredictor(PredictConfig(model=_small_model(), input_names=["x", "label"], output_names=["diff"],
                                        return_input=True), QueueInput(DataFromList(batches)))


def test_per_pixel_mean_reads_caffes_blob_proto_packed_or_not(tmp_path):
    """``ILSVRCMeta.get_per_pixel_mean`` (inception-bn.py's) reads caffe's ``imagenet_mean.binaryproto``;
    the files here are serialized by protobuf itself from caffe's ``BlobProto`` definition."""
    import cv2
    import example_data
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    from trainstack.tensorpack.dataflow.dataset import ILSVRCMeta

    F = descriptor_pb2.FieldDescriptorProto
    mean = example_data.per_pixel_mean()
    for packed in (True, False):
        proto = descriptor_pb2.FileDescriptorProto(name=f"blob{packed}.proto", package=f"caffe{int(packed)}")
        message = proto.message_type.add(name="BlobProto")
        for name, number in (("num", 1), ("channels", 2), ("height", 3), ("width", 4)):
            message.field.add(name=name, number=number, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
        data = message.field.add(name="data", number=5, type=F.TYPE_FLOAT, label=F.LABEL_REPEATED)
        data.options.packed = packed  # caffe.proto: [packed = true]
        message.field.add(name="diff", number=6, type=F.TYPE_FLOAT, label=F.LABEL_REPEATED)
        pool = descriptor_pool.DescriptorPool()
        pool.Add(proto)
        blob = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"caffe{int(packed)}.BlobProto"))(
            num=1, channels=3, height=256, width=256, data=mean.ravel().tolist(), diff=[1.0, 2.0])
        serialized = blob.SerializeToString()
        assert serialized.startswith(example_data.blob_proto(mean)) == packed  # the test data's writer
        meta = tmp_path / f"packed{packed}"
        meta.mkdir()
        (meta / "synsets.txt").write_text("n0\n")
        (meta / "imagenet_mean.binaryproto").write_bytes(serialized)
        got = ILSVRCMeta(str(meta)).get_per_pixel_mean()
        np.testing.assert_array_equal(got, mean.transpose(1, 2, 0))
        assert got.dtype == np.float32
        np.testing.assert_allclose(ILSVRCMeta(str(meta)).get_per_pixel_mean((224, 200)),
                                   cv2.resize(mean.transpose(1, 2, 0), (200, 224)))


def test_imagenet_models_accum_grad_applies_the_sum_of_niter_gradients_with_nesterov_momentum(tmp_path):
    """``ImageNetModel.accum_grad = 2`` (imagenet_utils' optimizer(): ``AccumGradOptimizer(MomentumOptimizer(
    lr, 0.9, use_nesterov=True), 2)``): the weights stay put at steps 1 and 3 and move at steps 2 and 4 by
    TF1's Nesterov update of the *sum* of the two steps' gradients (tensorpack's rule), computed in NumPy
    for a linear classifier on ImageNetModel's normalized input."""
    import importlib.util

    import tensorflow as tf

    from trainstack.loop import Callback
    from trainstack.tensorpack import FullyConnected, SimpleTrainer, TrainConfig, launch_train_with_config

    assert main([str(FOLDER), "--out", str(tmp_path)]) == 0
    spec = importlib.util.spec_from_file_location("ported_imagenet_utils", tmp_path / "imagenet_utils.py")
    imagenet_utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(imagenet_utils)

    class Linear(imagenet_utils.ImageNetModel):
        image_shape, data_format, weight_decay, accum_grad = 1, "NHWC", 0, 2

        def get_logits(self, image):
            return FullyConnected("linear", image, 1000, kernel_initializer=tf.zeros_initializer())

    class Weights(Callback):
        def __init__(self):
            self.values = []

        def _trigger_step(self):
            by_name = {v.name: v.numpy().copy() for v in self.trainer.tower_func.variables}
            self.values.append((by_name["linear/W:0"], by_name["linear/b:0"]))

    rng = np.random.RandomState(0)
    batches = [[rng.randint(0, 256, size=(2, 1, 1, 3)).astype("uint8"), rng.randint(0, 1000, size=2).astype("int32")]
               for _ in range(4)]
    weights = Weights()
    launch_train_with_config(TrainConfig(model=Linear(), dataflow=batches, callbacks=[weights], monitors=[],
                                         max_epoch=1, steps_per_epoch=4), SimpleTrainer())

    mean, std = np.array([0.406, 0.456, 0.485]) * 255, np.array([0.225, 0.224, 0.229]) * 255  # BGR
    W, b = np.zeros((3, 1000)), np.zeros(1000)
    acc_W, acc_b = np.zeros_like(W), np.zeros_like(b)  # TF1 MomentumOptimizer's accumulators
    sum_W, sum_b = np.zeros_like(W), np.zeros_like(b)  # AccumGradOptimizer's
    expected = []
    for step, (image, label) in enumerate(batches, 1):
        x = (image.reshape(2, 3) - mean) / std
        logits = x @ W + b
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        p[np.arange(2), label] -= 1
        sum_W, sum_b = sum_W + x.T @ p / 2, sum_b + p.mean(0)
        if step % 2 == 0:
            acc_W, acc_b = 0.9 * acc_W + sum_W, 0.9 * acc_b + sum_b
            W, b = W - 0.1 * (sum_W + 0.9 * acc_W), b - 0.1 * (sum_b + 0.9 * acc_b)
            sum_W, sum_b = np.zeros_like(W), np.zeros_like(b)
        expected.append((W.copy(), b.copy()))
    for step, ((got_W, got_b), (want_W, want_b)) in enumerate(zip(weights.values, expected), 1):
        np.testing.assert_allclose(got_W, want_W, rtol=1e-4, atol=1e-7, err_msg=f"step {step}")
        np.testing.assert_allclose(got_b, want_b, rtol=1e-4, atol=1e-7, err_msg=f"step {step}")
    assert not np.array_equal(weights.values[1][0], weights.values[0][0])  # moved at step 2
    assert np.array_equal(weights.values[2][0], weights.values[1][0])  # not at step 3
