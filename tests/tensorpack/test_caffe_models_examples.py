"""tensorpack's ``examples/CaffeModels`` inference scripts, ported by the port command and run as a user runs them.

The scripts are tensorpack's own, byte for byte, from commit 1547a54 (``tests/tensorpack/examples/CaffeModels/``,
with its ``demo-cpm.jpg``): ``load-alexnet.py``, ``load-vgg16.py``, ``load-vgg19.py`` and ``load-cpm.py``. Their
``--load`` is a ``.npz`` that ``tensorpack.utils.loadcaffe`` converts from a Caffe model (caffe's names:
``conv1/W``, ``conv1/b``, ...); here it holds random weights under those names and shapes
(``caffe_models_reference.py``), the last layer rescaled so that its outputs spread clearly. Each folder is
ported as a whole (import lines only), each script runs in a subprocess (``python SCRIPT --load X.npz --input
IMAGE``) on ``demo-cpm.jpg``, and what it prints or writes is compared with the same network written in plain
TensorFlow from the same arrays. ``ILSVRCMeta()`` reads caffe's ``synset_words.txt`` under
``$TENSORPACK_DATASET/ilsvrc_metadata``, written here. The ``.npz`` files (244 MB for AlexNet, 553 MB for VGG16,
574 MB for VGG19, 119 MB for CPM) are deleted after use.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from caffe_models_reference import (
    alexnet_features,
    alexnet_shapes,
    cpm_features,
    cpm_shapes,
    random_weights,
    resize_bilinear_tf1,
    vgg_features,
    vgg_shapes,
)
from test_image_examples import port
from test_tensorpack_examples import run

FOLDER = "CaffeModels"
IMAGE = Path(__file__).parent / "examples" / FOLDER / "demo-cpm.jpg"


@pytest.fixture
def meta(tmp_path: Path) -> Path:
    """``$TENSORPACK_DATASET`` with caffe's ILSVRC meta files: 1000 synsets, class ``k`` named ``class k``."""
    folder = tmp_path / "data" / "ilsvrc_metadata"
    folder.mkdir(parents=True)
    synsets = [f"n{1440764 + k:08d}" for k in range(1000)]
    (folder / "synsets.txt").write_text("".join(f"{s}\n" for s in synsets))
    (folder / "synset_words.txt").write_text("".join(f"{s} class {k}\n" for k, s in enumerate(synsets)))
    return folder.parent


def spread_last_layer(weights: dict[str, np.ndarray], features: np.ndarray, name: str) -> np.ndarray:
    """Rescale ``name/W`` so that the logits of ``features`` spread by 10, and return those logits."""
    logits = features @ weights[f"{name}/W"] + weights[f"{name}/b"]
    weights[f"{name}/W"] *= np.float32(10 / logits.std())
    return features @ weights[f"{name}/W"] + weights[f"{name}/b"]


def printed_top10(out: str) -> tuple[list[int], list[str]]:
    """The script's ``Top10 predictions: [...]`` and ``Top10 class names: [...]``."""
    found = re.search(r"^Top10 predictions: \[([0-9 \n]+)\]$", out, re.M)
    names = re.search(r"^Top10 class names: \[(.*)\]$", out, re.M)
    assert found and names, out[-3000:]
    return [int(k) for k in found.group(1).split()], re.findall(r"'([^']*)'", names.group(1))


def check_top10(out: str, logits: np.ndarray, restored: int) -> list[int]:
    assert f"Restored {restored} variables" in out, out[-3000:]
    top10, names = printed_top10(out)
    order = np.argsort(logits)[::-1]
    # the top 11 logits far enough apart that float32 rounding cannot reorder them
    assert np.diff(logits[order[:11]]).max() < -1e-3, logits[order[:11]]
    assert top10 == list(order[:10]), (top10, list(order[:10]), np.sort(logits)[::-1][:11])
    assert names == [f"n{1440764 + k:08d} class {k}" for k in top10]
    return top10


def test_load_alexnet_predicts_what_its_caffe_weights_give(tmp_path, meta):
    import cv2
    folder = port(FOLDER, tmp_path / "ported")
    weights = random_weights(alexnet_shapes())
    image = cv2.resize(cv2.imread(str(IMAGE)), (227, 227))[None, :, :, ::-1].astype("float32") - 110
    logits = spread_last_layer(weights, alexnet_features(weights, image), "fc8")[0]
    np.savez(tmp_path / "alexnet.npz", **weights)
    try:
        out = run([folder / "load-alexnet.py", "--load", tmp_path / "alexnet.npz", "--input", IMAGE], tmp_path, meta)
    finally:
        (tmp_path / "alexnet.npz").unlink()
    top10 = check_top10(out, logits, 16)
    print(f"load-alexnet.py: top 10 {top10}, logits {np.round(np.sort(logits)[::-1][:3], 2)}")


@pytest.mark.parametrize("depth", [16, 19])
def test_load_vgg_renames_caffes_weights_to_tf_layers_and_predicts_what_they_give(tmp_path, meta, depth):
    import cv2
    folder = port(FOLDER, tmp_path / "ported")
    weights = random_weights(vgg_shapes(depth))
    image = cv2.resize(cv2.cvtColor(cv2.imread(str(IMAGE)), cv2.COLOR_BGR2RGB), (224, 224)).astype("float32")
    image = image[None] - np.float32([123.68, 116.779, 103.939])
    features = vgg_features(weights, image, depth)
    assert np.isfinite(features).all() and features.max() > 0
    logits = spread_last_layer(weights, features, "fc8")[0]
    npz = tmp_path / f"vgg{depth}.npz"
    np.savez(npz, **weights)
    try:
        # the script renames caffe's '/W' and '/b' to tf.layers' '/kernel' and '/bias' before SmartInit
        out = run([folder / f"load-vgg{depth}.py", "--load", npz, "--input", IMAGE], tmp_path, meta)
    finally:
        npz.unlink()
    top10 = check_top10(out, logits, 2 * len(vgg_shapes(depth)))
    print(f"load-vgg{depth}.py: top 10 {top10}, logits {np.round(np.sort(logits)[::-1][:3], 2)}")


def test_load_cpm_writes_the_heatmap_of_its_caffe_weights(tmp_path):
    import cv2
    import matplotlib
    folder = port(FOLDER, tmp_path / "ported")
    weights = random_weights(cpm_shapes())
    image = cv2.resize(cv2.imread(str(IMAGE), cv2.IMREAD_COLOR).astype("float32"), (368, 368))
    features = cpm_features(weights, image)
    # the last stage's 14 body-part maps, summed, are linear in Mconv7_stage6: rescaled to span [0.05, 0.95]
    w, b = weights["Mconv7_stage6/W"][0, 0], weights["Mconv7_stage6/b"]
    summed = features @ w[:, :14].sum(1)
    scale = np.float32(0.9 / np.ptp(summed))
    weights["Mconv7_stage6/W"] *= scale
    weights["Mconv7_stage6/b"] = b * scale
    weights["Mconv7_stage6/b"][:14] += (0.05 - scale * (summed.min() + b[:14].sum())) / 14
    maps = features @ weights["Mconv7_stage6/W"][0, 0] + weights["Mconv7_stage6/b"]
    heatmap = resize_bilinear_tf1(maps, 368)[:, :, :14].sum(2)
    assert 0.04 < heatmap.min() < 0.1 and 0.9 < heatmap.max() < 0.96, (heatmap.min(), heatmap.max())
    np.savez(tmp_path / "cpm.npz", **weights)
    try:
        out = run([folder / "load-cpm.py", "--load", tmp_path / "cpm.npz", "--input", IMAGE], tmp_path)
    finally:
        (tmp_path / "cpm.npz").unlink()
    assert "Restored 104 variables" in out, out[-3000:]

    # output.jpg, in the working directory: the image blended half and half with the jet colors of the heatmap
    written = cv2.imread(str(tmp_path / "output.jpg")).astype("float32")
    assert written.shape == (368, 368, 3)
    jet = matplotlib.colormaps["jet"]
    expected = image * 0.5 + jet(heatmap)[:, :, 2::-1].astype("float32") * 255 * 0.5
    wrong = image * 0.5 + jet(heatmap[::-1])[:, :, 2::-1].astype("float32") * 255 * 0.5   # upside down
    error, wrong_error = np.abs(written - expected).mean(), np.abs(written - wrong).mean()
    assert error < 2.5 and wrong_error > 5 * error, (error, wrong_error)
    print(f"load-cpm.py: output.jpg within {error:.2f} of the reference blend (upside down: {wrong_error:.1f})")
