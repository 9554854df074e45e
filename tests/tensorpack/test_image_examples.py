"""tensorpack's other ImageNet-family and image examples, ported by the port command and run as a user runs them.

The scripts are tensorpack's own, byte for byte, from commit 1547a54 (``tests/tensorpack/examples/``, provenance
in its README.md): ``ImageNetModels/CAM-resnet.py`` (``examples/Saliency/``) and ``load-resnet.py``
(``examples/ResNet/``), next to the ``imagenet_utils.py`` and ``resnet_model.py`` their tensorpack folders link
to; ``ResNet/cifar10-preact18-mixup.py``; ``DoReFa-Net/alexnet-dorefa.py`` and ``resnet-dorefa.py`` with that
folder's ``imagenet_utils.py`` (a link in tensorpack); ``HED/hed.py``; ``Saliency/saliency-maps.py``. Each folder
is ported as a whole (import lines only) and each script runs in a subprocess, on small data in its dataset's
real format (``example_data.py``), training capped by ``run_example.py``. Inference modes load checkpoints in
the format the script reads: a ``.npz`` of its variables' tensorpack names (random weights, the last layer set
so that what the script prints follows from it), or, for ``load-resnet.py``, caffe's names, whose predictions
are checked against the same network written in plain TensorFlow. A script that stops in tensorpack too, as
written on a CPU, is checked to stop there, and runs with the line in its way changed (two lines for
CAM-resnet.py, which stops twice).
"""
from __future__ import annotations

import ast
import contextlib
import importlib.util
import json
import math
import re
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from test_imagenet_examples import eval_errors, model_weights
from test_more_examples import defined_names
from test_tensorpack_examples import RUNNER, assert_import_lines_only, run

from trainstack.tensorpack.port import main

EXAMPLES = Path(__file__).parent / "examples"
VAL_IMAGES = 8   # labels 0, 1, 2, 3, 0, 1, 2, 3 (example_data.write_ilsvrc12)


def port(folder: str, out: Path) -> Path:
    """``EXAMPLES/folder`` ported into ``out/folder``; asserts only import lines changed."""
    target = out / folder
    assert main([str(EXAMPLES / folder), "--out", str(target)]) == 0
    for p in (EXAMPLES / folder).glob("*.py"):
        assert_import_lines_only(p.read_bytes(), (target / p.name).read_bytes())
    return target


def change_line(script: Path, old: bytes, new: bytes) -> None:
    source = script.read_bytes()
    assert source.count(old) == 1, old
    script.write_bytes(source.replace(old, new))


@contextlib.contextmanager
def script_folder(script: Path) -> Iterator[None]:
    """The script's folder first on ``sys.path`` (its own modules: ``imagenet_utils``, ``dorefa``); ``sys.path``
    and ``sys.modules`` as they were afterwards."""
    before = set(sys.modules)
    sys.path.insert(0, str(script.parent))
    try:
        yield
    finally:
        sys.path.remove(str(script.parent))
        for name in set(sys.modules) - before:
            if str(script.parent) in (getattr(sys.modules[name], "__file__", None) or ""):
                del sys.modules[name]


def load_module(script: Path) -> object:
    """The ported ``script`` imported as a module (its ``__main__`` part not run), with its folder's modules."""
    with script_folder(script):
        spec = importlib.util.spec_from_file_location(script.stem.replace("-", "_"), script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def run_main(script: Path, *argv: str) -> None:
    """``python script *argv`` in this process (for a script that stops before it builds anything)."""
    saved = sys.argv
    sys.argv = [str(script), *argv]
    try:
        with script_folder(script):
            runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = saved


def variable_shapes(module: object, output: str, **globals_: object) -> dict[str, tuple[int, ...]]:
    """The TF1 names and shapes of the variables of the script's ``Model`` (built once by a predictor)."""
    from trainstack.tensorpack import OfflinePredictor, PredictConfig
    vars(module).update(globals_)
    predictor = OfflinePredictor(PredictConfig(model=module.Model(), input_names=["input", "label"],
                                               output_names=[output]))
    return {v.name[:-2]: tuple(v.shape) for v in predictor.tower_func.variables}


def random_weights(shapes: dict[str, tuple[int, ...]], seed: int = 0) -> dict[str, np.ndarray]:
    """He-scaled kernels, BatchNorm statistics near (0, 1), small biases: finite activations."""
    rng = np.random.RandomState(seed)
    out = {}
    for name, shape in shapes.items():
        if name.endswith(("variance/EMA", "gamma")):
            out[name] = rng.uniform(0.5, 1.5, shape)
        elif len(shape) > 1:
            out[name] = rng.normal(size=shape) * np.sqrt(2.0 / np.prod(shape[:-1]))
        else:
            out[name] = 0.1 * rng.normal(size=shape)
    return {k: v.astype("float32") for k, v in out.items()}


def class_bias() -> np.ndarray:
    """A last-layer bias ranking classes 2, 0, 7, 9, 11 first: with a zero kernel, every image is
    class 2 (top-1 error 6/8 on the 8 validation images) and has classes 0 and 2 in its top 5 (top-5
    error 4/8)."""
    b = np.zeros(1000, "float32")
    b[[2, 0, 7, 9, 11]] = [5, 4, 3, 2, 1]
    return b


@pytest.fixture
def ilsvrc(tmp_path):
    import example_data
    return Path(example_data.write_ilsvrc12(str(tmp_path / "data"), val=VAL_IMAGES))


# -- Saliency/CAM-resnet.py --------------------------------------------------------------------------------
#: CAM-resnet.py imports the pre-activation blocks by the names resnet_model.py had before tensorpack's commit
#: de6a2fe ("More general resnet blocks") renamed them preact_*: an ImportError in tensorpack as here
CAM_IMPORT = (b"from resnet_model import preresnet_basicblock, preresnet_group\n",
              b"from resnet_model import preact_basicblock as preresnet_basicblock, preact_group as preresnet_group\n")
#: on a CPU get_num_gpu() is 0 and BATCH_SIZE = TOTAL_BATCH_SIZE // num_gpu divides by it; tensorpack's
#: alexnet-dorefa.py and hed.py write what the script needs
CAM_GPUS = (b"    num_gpu = get_num_gpu()\n", b"    num_gpu = max(get_num_gpu(), 1)\n")


def test_cam_resnet_stops_where_tensorpack_stops_then_writes_its_class_activation_maps(tmp_path, ilsvrc):
    import cv2
    pytest.importorskip("matplotlib", reason="viz.intensity_to_rgb needs it, as tensorpack's")
    folder = port("ImageNetModels", tmp_path / "ported")
    script = folder / "CAM-resnet.py"
    defined = {n.name for n in ast.parse((folder / "resnet_model.py").read_text()).body
               if isinstance(n, ast.FunctionDef)}
    assert {"preact_basicblock", "preact_group"} <= defined and "preresnet_basicblock" not in defined
    with pytest.raises(ImportError, match="cannot import name 'preresnet_basicblock' from 'resnet_model'"):
        load_module(script)   # its import lines, as `python CAM-resnet.py` runs them first

    change_line(script, *CAM_IMPORT)
    from trainstack.tensorpack.utils.gpu import get_num_gpu
    assert get_num_gpu() == 0
    with pytest.raises(ZeroDivisionError) as stop:
        run_main(script, "--cam", "--data", str(ilsvrc))   # it divides before it builds or reads anything
    assert str(stop.traceback[-1].statement).strip() == "BATCH_SIZE = TOTAL_BATCH_SIZE // num_gpu"

    change_line(script, *CAM_GPUS)
    weights = random_weights(variable_shapes(load_module(script), "wrong-top1", DEPTH=18))
    weights["linearnew/W"] *= 0.05
    weights["linearnew/b"][0] = 1000.0   # every image is class 0: right on validation images 0 and 4
    np.savez(tmp_path / "cam.npz", **weights)
    out = run([script, "--cam", "--load", tmp_path / "cam.npz", "--data", ilsvrc], tmp_path, ilsvrc.parent)
    assert "Restored 90 variables" in out
    # viz_cam writes one image per rightly classified one: the 224x224 center crop, the heatmap of
    # linearnew/W's class-0 column over group3new's 14x14 maps, and their blend, side by side
    written = sorted(tmp_path.glob("cam*.jpg"))
    assert [p.name for p in written] == ["cam0-n01440764 class 0.jpg", "cam1-n01440764 class 0.jpg"], written
    for k, path in zip((0, 4), written):
        image, heatmap, blend = np.split(cv2.imread(str(path)).astype("float32"), 3, axis=1)
        assert image.shape == (224, 224, 3)
        val = cv2.imread(str(ilsvrc / "val" / f"ILSVRC2012_val_{k + 1:08d}.JPEG"))
        crop = cv2.resize(val, (341, 256))[16:240, 58:282]   # ResizeShortestEdge(256), CenterCrop(224)
        assert np.abs(image - crop).mean() < 8, np.abs(image - crop).mean()   # JPEG twice
        assert np.abs(blend - (image + heatmap) / 2).mean() < 6
        assert heatmap.std() > 10   # intensity_to_rgb of a map that varies


# -- ResNet/load-resnet.py ---------------------------------------------------------------------------------
def caffe_resnet50(rng: np.random.RandomState) -> dict[str, np.ndarray]:
    """Kaiming's ResNet-50 by caffe's names, as tensorpack's ``loadcaffe`` wrote it to ``.npz`` (``res2a_branch2a/W``,
    ``bn2a_branch2a/mean/EMA``, ...), random: He-scaled kernels, BatchNorm statistics near (0, 1)."""
    p = {}

    def conv_bn(conv: str, bn: str, k: int, cin: int, cout: int) -> None:
        p[f"{conv}/W"] = rng.normal(size=(k, k, cin, cout)) * np.sqrt(2.0 / (k * k * cin))
        p[f"{bn}/gamma"], p[f"{bn}/beta"] = rng.uniform(0.5, 1.5, cout), rng.normal(0, 0.1, cout)
        p[f"{bn}/mean/EMA"], p[f"{bn}/variance/EMA"] = rng.normal(0, 0.1, cout), rng.uniform(0.5, 1.5, cout)

    conv_bn("conv1", "bn_conv1", 7, 3, 64)
    cin = 64
    for group, (count, ch) in enumerate(zip([3, 4, 6, 3], [64, 128, 256, 512]), 2):
        for b in range(count):
            block = f"{group}{'abcdef'[b]}"
            if b == 0:
                conv_bn(f"res{block}_branch1", f"bn{block}_branch1", 1, cin, 4 * ch)
            for part, (k, i, o) in zip("abc", [(1, cin if b == 0 else 4 * ch, ch), (3, ch, ch), (1, ch, 4 * ch)]):
                conv_bn(f"res{block}_branch2{part}", f"bn{block}_branch2{part}", k, i, o)
        cin = 4 * ch
    p["fc1000/W"], p["fc1000/b"] = rng.normal(size=(2048, 1000)), np.zeros(1000)
    return {k: v.astype("float32") for k, v in p.items()}


def resnet50_logits(p: dict[str, np.ndarray], images: np.ndarray) -> np.ndarray:
    """load-resnet.py's network (caffe's padding, strides on the first 1x1 convolution), in plain TensorFlow,
    NHWC, from the caffe-named weights: the reference its predictions must follow."""
    import tensorflow as tf

    def conv_bn(x, conv, bn, stride=1, padding="SAME"):
        x = tf.nn.conv2d(x, p[f"{conv}/W"], stride, padding)
        return tf.nn.batch_normalization(x, p[f"{bn}/mean/EMA"], p[f"{bn}/variance/EMA"], p[f"{bn}/beta"],
                                         p[f"{bn}/gamma"], 1e-5)

    x = tf.pad(tf.constant(images, tf.float32), [[0, 0], [3, 2], [3, 2], [0, 0]])
    x = tf.nn.max_pool2d(tf.nn.relu(conv_bn(x, "conv1", "bn_conv1", 2, "VALID")), 3, 2, "SAME")
    for group, (count, stride) in enumerate(zip([3, 4, 6, 3], [1, 2, 2, 2]), 2):
        for b in range(count):
            block, s = f"{group}{'abcdef'[b]}", stride if b == 0 else 1
            shortcut = conv_bn(x, f"res{block}_branch1", f"bn{block}_branch1", s) if b == 0 else x
            y = tf.nn.relu(conv_bn(x, f"res{block}_branch2a", f"bn{block}_branch2a", s))
            y = tf.nn.relu(conv_bn(y, f"res{block}_branch2b", f"bn{block}_branch2b"))
            x = tf.nn.relu(conv_bn(y, f"res{block}_branch2c", f"bn{block}_branch2c") + shortcut)
    return (tf.reduce_mean(x, [1, 2]) @ p["fc1000/W"] + p["fc1000/b"]).numpy()


def test_load_resnet_converts_caffes_names_and_predicts_what_its_weights_give(tmp_path, ilsvrc):
    import cv2

    from trainstack.tensorpack.dataflow import imgaug
    from trainstack.tensorpack.dataflow.dataset import ILSVRCMeta
    folder = port("ImageNetModels", tmp_path / "ported")
    mean = ILSVRCMeta(str(ilsvrc.parent / "ilsvrc_metadata")).get_per_pixel_mean()[16:-16, 16:-16]
    crop = imgaug.AugmentorList([imgaug.ResizeShortestEdge(256), imgaug.CenterCrop((224, 224))])
    files = [ilsvrc / "val" / f"ILSVRC2012_val_{i + 1:08d}.JPEG" for i in range(VAL_IMAGES)]
    images = np.stack([crop.augment(cv2.imread(str(f)).astype("float32")) - mean for f in files])
    weights = caffe_resnet50(np.random.RandomState(0))
    features_logits = resnet50_logits(weights, images)
    weights["fc1000/W"] *= 10 / features_logits.std()   # logits of spread 10: a clear top 10
    weights["fc1000/b"][:4] = 40   # classes 0-3 first, in an order that depends on the image
    logits = resnet50_logits(weights, images)
    np.savez(tmp_path / "caffe.npz", **weights)

    out = run([folder / "load-resnet.py", "--load", tmp_path / "caffe.npz", "-d", "50", "--input", files[1],
               "--convert", tmp_path / "converted.npz"], tmp_path, ilsvrc.parent)
    converted = dict(np.load(tmp_path / "converted.npz"))
    assert len(converted) == len(weights) == 267 and "Restored 267 variables" in out
    np.testing.assert_array_equal(converted["group0/block0/convshortcut/bn/variance/EMA"],
                                  weights["bn2a_branch1/variance/EMA"])
    np.testing.assert_array_equal(converted["group3/block2/conv3/W"], weights["res5c_branch2c/W"])
    np.testing.assert_array_equal(converted["linear/W"], weights["fc1000/W"])
    printed = re.search(r"^\[([0-9 \n]+)\]$", out, re.M)
    assert printed, out[-3000:]
    top10 = [int(k) for k in printed.group(1).split()]
    assert top10 == list(np.argsort(logits[1])[::-1][:10]), (top10, np.sort(logits[1])[::-1][:10])
    print(f"load-resnet.py --input: top 10 {top10}, logits {np.round(np.sort(logits[1])[::-1][:3], 1)}")

    # --eval restores with SmartRestore, which tensorpack renamed SmartInit before 1547a54 (commit 17b34c69)
    # and 0.11 does not define: a NameError in tensorpack as here (the script binds it nowhere, its star
    # import gives none); SmartInit takes the same dict
    args = [folder / "load-resnet.py", "--load", tmp_path / "caffe.npz", "-d", "50", "--eval", ilsvrc]
    assert "SmartRestore(param)" in (folder / "load-resnet.py").read_text()
    assert "SmartRestore" not in defined_names(folder / "load-resnet.py")
    import trainstack.tensorpack
    assert "SmartRestore" not in trainstack.tensorpack.__all__
    tensorpack_0_11 = Path(importlib.util.find_spec("tensorpack").origin).parent   # not imported: it sets TF flags
    assert not [p for p in tensorpack_0_11.rglob("*.py") if "SmartRestore" in p.read_text()]
    change_line(folder / "load-resnet.py", b"eval_classification(Model(), SmartRestore(param), ds)",
                b"eval_classification(Model(), SmartInit(param), ds)")
    out = run(args, tmp_path, ilsvrc.parent)
    # its validation dataflow resizes the uint8 images (ILSVRC12Files), --input the float32 one
    logits = resnet50_logits(weights, np.stack([crop.augment(cv2.imread(str(f))) - mean for f in files]))
    labels = np.arange(VAL_IMAGES) % 4
    top1 = np.mean(logits.argmax(1) != labels)
    top5 = np.mean([label not in np.argsort(row)[-5:] for row, label in zip(logits, labels)])
    assert eval_errors(out) == (pytest.approx(top1), pytest.approx(top5))
    print(f"load-resnet.py --eval: top-1 error {top1}, top-5 error {top5}, as the reference network's")


# -- DoReFa-Net/resnet-dorefa.py and alexnet-dorefa.py -----------------------------------------------------
def dorefa_checkpoint(script: Path, path: Path) -> dict[str, tuple[int, ...]]:
    """A ``.npz`` of every variable of the script's model, by tensorpack's names: random, but ``fct``'s
    kernel zero and its bias :func:`class_bias`, so that every image gets ``softmax(class_bias())``."""
    shapes = variable_shapes(load_module(script), "output")
    weights = random_weights(shapes)
    weights["fct/W"][:] = 0
    weights["fct/b"] = class_bias()
    np.savez(path, **weights)
    return shapes


def test_resnet_dorefa_evaluates_a_checkpoint_of_its_names_and_its_run_mode_stops_as_tensorpacks(tmp_path, ilsvrc):
    folder = port("DoReFa-Net", tmp_path / "ported")
    script = folder / "resnet-dorefa.py"
    shapes = dorefa_checkpoint(script, tmp_path / "resnet.npz")
    out = run([script, "--load", tmp_path / "resnet.npz", "--eval", "--data", ilsvrc], tmp_path, ilsvrc.parent)
    assert f"Restored {len(shapes)} variables" in out
    # (W, A, G) = (1, 4, 32): every kernel but the first and the last binarized through remap_variables
    binarized = set(re.findall(r"Binarizing weight (\S+)", out))
    assert binarized == {n for n in shapes if n.endswith("/W") and n not in ("conv1/W", "fct/W")}, binarized
    assert len(binarized) == 20   # 2 in each of the 8 blocks, 4 shortcuts
    # every image is class 2, with 0 and 2 among its top 5: labels 0, 1, 2, 3, 0, 1, 2, 3
    assert eval_errors(out) == (pytest.approx(6 / 8), pytest.approx(4 / 8))
    # --run: get_inference_augmentor() returns the list of augmentors and run_image calls .augment on it,
    # an AttributeError in tensorpack as here (its --eval wraps the list in AugmentImageComponent)
    module = load_module(script)
    augmentors = module.get_inference_augmentor()
    assert isinstance(augmentors, list) and not hasattr(augmentors, "augment")
    assert "transformers = get_inference_augmentor()" in script.read_text()
    assert "img = transformers.augment(img)" in script.read_text()


def test_alexnet_dorefa_runs_its_checkpoint_on_images(tmp_path, ilsvrc):
    folder = port("DoReFa-Net", tmp_path / "ported")
    script = folder / "alexnet-dorefa.py"
    shapes = dorefa_checkpoint(script, tmp_path / "alexnet.npz")
    # its --run resizes a float32 image by cubic interpolation, which overshoots [0, 255] on the noisy validation
    # images, and feeds it to the model's uint8 input: TF1's feed wrapped 265.8 to 9, trainstack refuses the
    # values (InputSignatureError naming the input and the range). Images of levels in [40, 215] stay in range.
    import cv2

    from trainstack.tensorpack.dataflow import imgaug
    inference = imgaug.AugmentorList(load_module(script).fbresnet_augmentor(False))
    ranges = [inference.augment(cv2.imread(str(ilsvrc / "val" / f"ILSVRC2012_val_{i:08d}.JPEG")).astype("float32"))
              for i in range(1, VAL_IMAGES + 1)]
    assert any(r.min() < 0 or r.max() > 255 for r in ranges), [(r.min(), r.max()) for r in ranges]
    images = []
    for i in (1, 2):
        image = cv2.imread(str(ilsvrc / "val" / f"ILSVRC2012_val_{i:08d}.JPEG"))
        images.append(tmp_path / f"image{i}.jpg")
        cv2.imwrite(str(images[-1]), (40 + image.astype("float32") * (175 / 255)).astype("uint8"))
    out = run([script, "--dorefa", "1,2,6", "--load", tmp_path / "alexnet.npz", "--run", *images], tmp_path,
              ilsvrc.parent)
    assert f"Restored {len(shapes)} variables" in out
    quantized = set(re.findall(r"Quantizing weight (\S+)", out))
    assert quantized == {"conv1/W", "conv2/W", "conv3/W", "conv4/W", "fc0/W", "fc1/W"}, quantized
    b = class_bias()
    softmax = np.exp(b) / np.exp(b).sum()
    words = [f"n{1440764 + k:08d} class {k}" for k in (2, 0, 7, 9, 11)]
    for image in images:
        printed = out.split(f"{image}:\n")[1].splitlines()[0]   # [(name, probability), ...], best first
        pairs = re.findall(r"\('([^']*)', (?:np\.float32\()?([0-9.e-]+)\)?\)", printed)
        assert len(pairs) == 10, printed
        assert [name for name, _ in pairs[:5]] == words, printed
        np.testing.assert_allclose([float(p) for _, p in pairs[:5]], softmax[[2, 0, 7, 9, 11]], rtol=1e-4)
    print(f"alexnet-dorefa.py --run: {words[0]} at {softmax[2]:.4f}, as softmax(fct/b)")


# -- ResNet/cifar10-preact18-mixup.py ----------------------------------------------------------------------
def test_cifar10_preact18_mixup_trains_on_mixed_pairs_without_its_gpu_assertion(tmp_path, monkeypatch):
    import example_data
    import tensorflow as tf
    data = tmp_path / "data"
    example_data.write_cifar10(str(data), per_batch=128, test=128)   # its batch is 128, fixed
    script = port("ResNet", tmp_path / "ported") / "cifar10-preact18-mixup.py"
    # as written its build_graph asserts a GPU: on a CPU it stops there, as tensorpack's did
    assert not tf.test.is_gpu_available()
    change_line(script, b"        assert tf.test.is_gpu_available()\n", b"")

    # the mixup the script computes in its dataflow: pairs of images and their one-hot labels, mixed
    monkeypatch.setenv("TENSORPACK_DATASET", str(data))
    module = load_module(script)
    for mixup in (True, False):
        flow = module.get_data("train", mixup, 1.0)
        flow.reset_state()
        images, labels = next(iter(flow))
        assert images.shape == (128, 32, 32, 3) and labels.shape == (128, 10)
        np.testing.assert_allclose(labels.sum(1), 1, rtol=1e-6)
        mixed = (labels > 0).sum(1)
        assert mixed.max() <= 2 and (mixed == 2).mean() > 0.5 if mixup else (mixed == 1).all(), mixed

    run([RUNNER, "--max-epoch", 2, "--steps-per-epoch", 1, script, "--mixup"], tmp_path, data)
    logdir = tmp_path / "train_log" / "cifar10-preact18-mixup"
    rows = [json.loads(line) for line in (logdir / "stats.jsonl").read_text().splitlines()]
    assert rows[0]["learning_rate"] == pytest.approx(0.1)   # LR_SCHEDULE's (0, 0.1), before training
    rows = [r for r in rows if r["global_step"] > 0]
    assert [(r["epoch_num"], r["global_step"]) for r in rows] == [(1, 1), (2, 2)]
    for r in rows:
        assert math.isfinite(r["cross_entropy_loss"]) and 0 <= r["train_error"] <= 1
        assert math.isfinite(r["validation_cost"]) and 0 <= r["validation_error"] <= 1
    before, after = model_weights(logdir / "model-1"), model_weights(logdir / "model-2")
    kernels = [k for k in before if k.endswith("/W")]
    assert len(kernels) == 21 and all(not np.array_equal(before[k], after[k]) for k in kernels)
    print(f"cifar10-preact18-mixup.py --mixup: cross_entropy_loss {rows[0]['cross_entropy_loss']:.3f} -> "
          f"{rows[-1]['cross_entropy_loss']:.3f}, validation_error {rows[-1]['validation_error']:.3f}")


# -- HED/hed.py ---------------------------------------------------------------------------------------------
def test_hed_trains_on_bsds500_and_writes_its_edge_maps(tmp_path):
    import cv2
    import example_data
    data = tmp_path / "data"
    example_data.write_bsds500(str(data / "bsds500_data"), {"train": 8, "val": 2, "test": 1})  # a batch is 8
    script = port("HED", tmp_path / "ported") / "hed.py"
    run([RUNNER, "--max-epoch", 2, "--steps-per-epoch", 1, script], tmp_path, data)
    logdir = tmp_path / "train_log" / "hed"
    rows = [json.loads(line) for line in (logdir / "stats.jsonl").read_text().splitlines()]
    assert rows[0]["learning_rate"] == pytest.approx(3e-5)
    rows = [r for r in rows if r["global_step"] > 0]
    assert [(r["epoch_num"], r["global_step"]) for r in rows] == [(1, 1), (2, 2)]
    losses = ["cost", "wd_cost", "train_error", *(f"xentropy{k}" for k in range(1, 7))]
    for r in rows:
        assert all(math.isfinite(r[name]) for name in losses), r
        assert 0 <= r["val_precision"] <= 1 and 0 <= r["val_recall"] <= 1   # BinaryClassificationStats
    assert rows[0]["cost"] != rows[1]["cost"]
    before, after = model_weights(logdir / "model-1"), model_weights(logdir / "model-2")
    kernels = [k for k in before if k.endswith("/W")]
    assert len(kernels) == 19 and all(not np.array_equal(before[k], after[k]) for k in kernels)
    assert np.abs(after["branch1/convfc/W"]).max() > 0   # a zero initializer (tf.constant_initializer())

    image = next((data / "bsds500_data" / "BSR" / "BSDS500" / "data" / "images" / "test").glob("*.jpg"))
    out = run([script, "--load", logdir / "model-2", "--run", image], tmp_path)
    assert "Results saved to out*.png" in out
    for name in ("out1", "out2", "out3", "out4", "out5", "out-fused"):
        edges = cv2.imread(str(tmp_path / f"{name}.png"), cv2.IMREAD_UNCHANGED)
        assert edges.shape == (320, 480), (name, edges.shape)   # 321x481, cut to multiples of 16
    print(f"hed.py: cost {rows[0]['cost']:.4f} -> {rows[1]['cost']:.4f}, xentropy6 {rows[0]['xentropy6']:.5f} -> "
          f"{rows[1]['xentropy6']:.5f}, val_precision {rows[1]['val_precision']}")


# -- Saliency/saliency-maps.py ------------------------------------------------------------------------------
MEAN_RGB = np.array([123.68, 116.78, 103.94], "float32")


def write_slim_checkpoint(prefix: Path, values: dict[str, np.ndarray]) -> None:
    """A TF1 name-based checkpoint as TF-slim's ``resnet_v1_50.ckpt``: ``prefix.index`` and its data file, keyed by
    the variables' names and nothing else (``SaveV2``, the op ``tf.compat.v1.train.Saver`` writes with)."""
    import tensorflow as tf
    names = sorted(values)
    tf.raw_ops.SaveV2(prefix=str(prefix), tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(values[n]) for n in names])
    assert sorted(dict(tf.train.list_variables(str(prefix)))) == names


def saliency_images(saliency: np.ndarray, im: np.ndarray) -> dict[str, np.ndarray]:
    """What saliency-maps.py writes from a saliency (the same arithmetic, computed here in NumPy)."""
    from trainstack.tensorpack.utils import viz
    pos, neg = np.maximum(0, saliency), np.maximum(0, -saliency)
    pos, neg = pos - pos.min(), neg - neg.min()
    abs_rgb = viz.intensity_to_rgb(np.abs(saliency).max(axis=-1), normalize=True)[:, :, ::-1]
    return {"pos.jpg": pos / pos.max() * 255, "neg.jpg": neg / neg.max() * 255, "abs-saliency.jpg": abs_rgb,
            "blended.jpg": im * 0.2 + abs_rgb * 0.8}


def as_jpeg(image: np.ndarray) -> np.ndarray:
    """``image`` as ``cv2.imwrite`` writes it to a ``.jpg`` and ``cv2.imread`` reads it back."""
    import cv2
    ok, data = cv2.imencode(".jpg", image)
    assert ok
    return cv2.imdecode(data, cv2.IMREAD_COLOR).astype("float32")


def test_saliency_maps_writes_the_guided_backprop_saliency_of_slims_resnet50(tmp_path, capsys):
    """saliency-maps.py, its import lines ported (``slim`` and ``slim.nets.resnet_v1`` from the TF1 room), run as a
    user runs it: ``python saliency-maps.py image.jpg`` next to TF-slim's ``resnet_v1_50.ckpt`` (random weights under
    slim's names, and ``resnet_v1_50/mean_rgb``). Its four images are written, 224x224, and are those of guided
    backpropagation through a plain TF2 ResNet-50 of the same arrays (``slim_resnet_reference.py``), written to
    JPEG the same way (within a grey level), and not those of the plain gradient."""
    import cv2
    import slim_resnet_reference as ref
    import tensorflow as tf
    pytest.importorskip("matplotlib", reason="viz.intensity_to_rgb needs it, as tensorpack's")
    folder = port("Saliency", tmp_path / "ported")
    report = capsys.readouterr().out
    assert "saliency-maps.py:9: import tensorflow.contrib.slim as slim -> from trainstack.tensorpack.tf1.contrib " \
           "import slim" in report
    assert "saliency-maps.py:10: from tensorflow.contrib.slim.nets import resnet_v1 -> from " \
           "trainstack.tensorpack.tf1.slim_nets import resnet_v1" in report

    weights = ref.random_weights(seed=3)
    write_slim_checkpoint(tmp_path / "resnet_v1_50.ckpt", {**weights, "resnet_v1_50/mean_rgb": MEAN_RGB})
    yy, xx = np.mgrid[0:180, 0:260]
    bgr = np.stack([127 + 100 * np.sin(xx / 17.0), 127 + 100 * np.cos(yy / 13.0), (xx + yy) % 256], -1)
    cv2.imwrite(str(tmp_path / "image.jpg"), bgr.astype("uint8"))
    run([folder / "saliency-maps.py", "image.jpg"], tmp_path)

    im = cv2.resize(cv2.imread(str(tmp_path / "image.jpg")), (224, 224)).astype("float32")[:, :, ::-1]
    guided = ref.guided_saliency(weights, MEAN_RGB, np.ascontiguousarray(im))
    expected = saliency_images(guided, im)
    plain = saliency_images(ref.guided_saliency(weights, MEAN_RGB, np.ascontiguousarray(im), relu=tf.nn.relu), im)
    errors = {}
    for name, want in expected.items():
        written = cv2.imread(str(tmp_path / name))
        assert written is not None and written.shape == (224, 224, 3), name
        error, plain_error = (np.abs(written.astype("float32") - as_jpeg(w)).mean() for w in (want, plain[name]))
        print(f"saliency-maps.py {name}: mean |written - guided backprop| = {error:.3f} grey levels "
              f"(plain gradient: {plain_error:.2f})")
        errors[name] = error, plain_error
    for name, (error, plain_error) in errors.items():
        assert error < 1.0, (name, error)
        assert plain_error > 5 * error + 3.0, (name, error, plain_error)
