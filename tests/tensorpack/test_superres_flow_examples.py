"""tensorpack's ``SuperResolution/enet-pat.py`` and ``OpticalFlow/flownet2.py``, ported by the port command and run
as a user runs them.

Both folders are byte for byte from tensorpack master 1547a54 (``tests/tensorpack/examples/``; ``GAN.py`` is
``examples/GAN/GAN.py``, a link in tensorpack's ``SuperResolution/``). ``enet-pat.py`` trains on a tiny COCO
training zip (JPEGs under ``train2017/``, as COCO's ``train2017.zip``) with a ``vgg19.npz`` of random weights under
the names it loads, capped by ``run_example.py``; then its ``--apply`` mode runs the checkpoint it wrote on an image.
``data_sampler.py --create`` (its LMDB) stops at NumPy 2's removed ``tostring()`` and runs with ``tobytes()``.
``flownet2.py`` is inference only: it runs on image pairs with an ``.npz`` of random weights under the names its
models load. As written it shows each result in an OpenCV window before writing it, which headless OpenCV cannot
(it stops there); ``run_without_display.py`` runs it with the window functions returning at once. Its correlation
layer (NCHW, on the CPU) is checked against its formula in NumPy, and its Sintel mode's average endpoint error
against the one computed from the flows it predicts.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_gan_examples import checkpoints, images
from test_tensorpack_examples import EXAMPLES, RUNNER, port_folder, run

HERE = Path(__file__).parent
NO_DISPLAY = HERE / "run_without_display.py"

#: what the port command changes in each script of the folders (import lines only)
SR_PORTED = {"GAN.py": 7, "data_sampler.py": 1, "enet-pat.py": 6}
FLOW_PORTED = {"flownet2.py": 2, "flownet_models.py": 2, "helper.py": 0}


# -- SuperResolution/enet-pat.py ----------------------------------------------------------------------------
def write_coco_zip(path: Path, n: int = 16) -> None:
    """A zip as COCO's ``train2017.zip``: ``train2017/<12 digits>.jpg``, here ``n`` of at least 384x384 (stripes,
    waves and a checkerboard, with noise), plus one too small for the script (300x500, rejected by its
    ``RejectTooSmallImages``) and a file that is not a JPEG (skipped by ``ImageDataFromZIPFile``)."""
    import cv2
    rng = np.random.RandomState(0)
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(n):
            h, w = (400 + 16 * i, 480) if i % 2 else (480, 400 + 8 * i)
            yy, xx = np.mgrid[0:h, 0:w]
            image = np.stack([127 + 100 * np.sin(xx / (7 + i)), 127 + 100 * np.cos(yy / 9.0),
                              255 * ((xx // 20 + yy // 20) % 2)], -1)
            image = np.clip(image + rng.normal(0, 10, image.shape), 0, 255).astype(np.uint8)
            archive.writestr(f"train2017/{i:012d}.jpg", cv2.imencode(".jpg", image)[1].tobytes())
        archive.writestr("train2017/small.jpg", cv2.imencode(".jpg", np.zeros((300, 500, 3), np.uint8))[1].tobytes())
        archive.writestr("train2017/LICENSE.txt", "not an image")


def write_vgg19(path: Path) -> dict[str, np.ndarray]:
    """A stand-in for tensorpack's ``vgg19.npz`` (converted from Caffe): the 16 convolutions' ``convK_L/W`` and
    ``convK_L/b`` the script loads (it prefixes ``VGG19/``), random He-scaled kernels, small biases."""
    rng = np.random.RandomState(1)
    arrays, cin = {}, 3
    for block, (count, cout) in enumerate([(2, 64), (2, 128), (4, 256), (4, 512), (4, 512)], 1):
        for k in range(1, count + 1):
            arrays[f"conv{block}_{k}/W"] = (rng.normal(size=(3, 3, cin, cout)) * np.sqrt(2.0 / (9 * cin))).astype("f4")
            arrays[f"conv{block}_{k}/b"] = (0.01 * rng.normal(size=cout)).astype("f4")
            cin = cout
    np.savez(path, **arrays)
    return arrays


def vgg_weights(checkpoint: Path) -> dict[str, np.ndarray]:
    """The VGG19 values of a checkpoint by their TF1 names (``conv1_1/W``): the script freezes them, so they are
    in the model as ``VGG19/...`` variables, not in ``g_vars``."""
    import tensorflow as tf
    prefix = "model/untracked/VGG19.S"
    return {n[len(prefix):].split("/.ATTRIBUTES")[0].replace(".S", "/"): tf.train.load_checkpoint(str(checkpoint))
            .get_tensor(n) for n, _ in tf.train.list_variables(str(checkpoint)) if n.startswith(prefix)}


def test_enet_pat_trains_on_a_coco_zip_updates_its_discriminator_as_tensorpack_and_applies(tmp_path):
    import cv2
    write_coco_zip(tmp_path / "train2017.zip")
    vgg = write_vgg19(tmp_path / "vgg19.npz")
    assert port_folder(EXAMPLES / "SuperResolution", tmp_path / "ported") == SR_PORTED
    script = tmp_path / "ported" / "enet-pat.py"
    logdir = tmp_path / "train_log" / "enet-pat"
    try:
        # 3 epochs of 1 step: a checkpoint after each step (ModelSaver, every epoch)
        run([RUNNER, "--max-epoch", 3, "--steps-per-epoch", 1, script, "--vgg19", "vgg19.npz",
             "--data", "train2017.zip"], tmp_path)
        rows = [json.loads(line) for line in (logdir / "stats.jsonl").read_text().splitlines()]
        # SeparateGANTrainer.run_step runs d_min when global_step % 3 == 0, then g_min; tensorpack's
        # global_step counts hooked runs (MaintainStepCounter), so a step with both moves it by 2:
        # steps at global_step 0 (d, g), 2 (g), 3 (d, g)
        assert [(r["epoch_num"], r["global_step"]) for r in rows] == [(1, 2), (2, 3), (3, 5)]
        losses = ["total_g_loss", "d_loss", *(f"additional_losses/loss_{k}" for k in ("LA", "LP1", "LP2", "LT1",
                                                                                        "LT2", "LT3")),
                  "GAN_loss/gen/loss", "GAN_loss/discrim/loss", "GAN_loss/discrim/accuracy"]
        for row in rows:
            assert all(np.isfinite(row[k]) for k in losses), row
        assert rows[0]["total_g_loss"] != rows[-1]["total_g_loss"]

        saved = checkpoints(logdir)
        assert sorted(saved) == [2, 3, 5]
        g_vars = sorted(n for n in saved[2] if "/g_vars/" in n)
        d_vars = sorted(n for n in saved[2] if "/d_vars/" in n)
        assert len(g_vars) == 50 and len(d_vars) == 24   # 25 convolutions; 10 convolutions and 2 dense layers
        steps = list(zip(sorted(saved), sorted(saved)[1:]))   # the 2nd and 3rd steps
        d_changed = [sum(not np.array_equal(saved[a][n], saved[b][n]) for n in d_vars) for a, b in steps]
        g_changed = [sum(not np.array_equal(saved[a][n], saved[b][n]) for n in g_vars) for a, b in steps]
        # the discriminator moved in the 3rd step (global_step 3), all of it, not in the 2nd; the generator in both
        assert d_changed == [0, 24], d_changed
        assert all(c >= 45 for c in g_changed), g_changed
        # the perceptual loss's VGG19: the stand-in's values, restored by SmartInit(dict) and frozen
        for step in (2, 5):
            found = vgg_weights(logdir / f"model-{step}")
            assert sorted(found) == sorted(vgg) and all(np.array_equal(found[k], vgg[k]) for k in vgg)

        # tf.summary.image('input,fake,real', ...) (TF1 made the name 'input_fake_real'): 16 images of the
        # bicubic baseline, the generated and the real 128x128 crop side by side, each epoch
        shown = images(logdir, "input_fake_real")
        assert sorted(shown) == [2, 3, 5]
        for batch in shown.values():
            assert len(batch) == 16 and all(i.shape == (128, 384, 3) for i in batch)

        # --apply on a 24x40 image with the last checkpoint: predition.png (sic) and baseline.png, 4x as large
        low = np.random.RandomState(2).uniform(0, 255, (24, 40, 3)).astype(np.uint8)
        cv2.imwrite(str(tmp_path / "low.png"), low)
        (tmp_path / "out").mkdir()
        out = run([script, "--apply", "--load", logdir / "model-5", "--lowres", "low.png", "--output", "out"],
                  tmp_path)
        # the generator's 50 variables, keyed model/g_vars/<k> in the training's checkpoint, found by their names
        assert re.search(r"Restored 50 variables from checkpoint \S*model-5", out), out[-3000:]
        baseline = cv2.imread(str(tmp_path / "out" / "baseline.png"))
        prediction = cv2.imread(str(tmp_path / "out" / "predition.png"))
        expected = cv2.resize(low.astype(np.float32), (0, 0), fx=4, fy=4, interpolation=cv2.INTER_CUBIC)
        assert baseline.shape == prediction.shape == (96, 160, 3)
        assert np.abs(baseline.astype(float) - np.clip(np.round(expected), 0, 255)).max() <= 1
        # the generator's residual added to a bicubic upscaling of its own (TF's, align_corners=True): after 3
        # steps of its huge first losses it saturates much of the image
        assert not np.array_equal(prediction, baseline) and prediction.std(axis=(0, 1)).min() > 0
        print(f"enet-pat.py: total_g_loss {rows[0]['total_g_loss']:.2f} -> {rows[-1]['total_g_loss']:.2f}, d_loss "
              f"{rows[0]['d_loss']:.3f} -> {rows[-1]['d_loss']:.3f}; d changed {d_changed}, g changed {g_changed}; "
              f"prediction - baseline {np.abs(prediction.astype(float) - baseline).mean():.2f}")
    finally:
        for data in logdir.glob("model-*.data-*"):   # about 250 MB each
            data.unlink()


# -- OpticalFlow/flownet2.py --------------------------------------------------------------------------------
def flownet_weights(models: Any, model: str, path: Path, seed: int = 0) -> dict[str, np.ndarray]:
    """An ``.npz`` of random weights under the names ``flownet_models.py``'s ``model`` loads (its ``tf.layers``'
    ``conv1/kernel``, ``conv1/bias``, ...; FlowNet2's sub-networks under ``flownet_s1/`` ...), as tensorpack's
    converted ``flownet2-c.npz``: kernels scaled by their fan-in, small biases."""
    from trainstack.tensorpack import OfflinePredictor, PredictConfig
    predictor = OfflinePredictor(PredictConfig(model=models.FlowNet2C(height=64, width=64) if model == "flownet2-c"
                                               else models.FlowNet2S(height=64, width=64),
                                               input_names=["left", "right"], output_names=["prediction"]))
    rng = np.random.RandomState(seed)
    weights = {}
    for var in predictor.tower_func.variables:
        name, shape = var.name[:-2], tuple(var.shape)
        scale = np.sqrt(1.0 / np.prod(shape[:-1])) if name.endswith("kernel") else 0.01
        weights[name] = (scale * rng.normal(size=shape)).astype("float32")
    np.savez(path, **weights)
    return weights


def frames(n: int, shift: int = 2) -> list[np.ndarray]:
    """``n`` 70x80 BGR frames of waves and stripes, each moved ``shift`` pixels right of the one before."""
    yy, xx = np.mgrid[0:70, 0:80]
    first = np.stack([128 + 100 * np.sin(xx / 5.0), 128 + 100 * np.cos(yy / 7.0), (xx * 3) % 255], -1)
    return [np.roll(first, k * shift, axis=1).astype(np.uint8) for k in range(n)]


def write_flo(path: Path, flow: np.ndarray) -> None:
    """A Middlebury ``.flo`` file (Sintel's): the float32 202021.25, the int32 width and height, then the flow."""
    path.parent.mkdir(parents=True, exist_ok=True)
    h, w = flow.shape[:2]
    path.write_bytes(np.float32(202021.25).tobytes() + np.int32(w).tobytes() + np.int32(h).tobytes()
                     + flow.astype(np.float32).tobytes())


def numpy_correlation(a: np.ndarray, b: np.ndarray, max_displacement: int, stride: int) -> np.ndarray:
    """FlowNet's correlation of NCHW ``a`` with ``b`` (kernel 1): for each displacement (dy, dx) on the grid of
    ``stride`` within ``max_displacement``, row-major, the channel mean of a(y, x) * b(y + dy, x + dx), zero
    outside ``b``."""
    n, c, h, w = a.shape
    d = max_displacement
    out = []
    for dy in range(-d, d + 1, stride):
        for dx in range(-d, d + 1, stride):
            shifted = np.zeros_like(b)
            ys, xs = slice(max(0, -dy), min(h, h - dy)), slice(max(0, -dx), min(w, w - dx))
            shifted[:, :, ys, xs] = b[:, :, ys.start + dy:ys.stop + dy, xs.start + dx:xs.stop + dx]
            out.append((a * shifted).mean(axis=1))
    return np.stack(out, axis=1)


@pytest.fixture
def flownet(tmp_path):
    """The OpticalFlow folder ported, ``flownet_models.py`` and ``helper.py`` of it imported: (folder, models,
    helper)."""
    from test_image_examples import load_module
    assert port_folder(EXAMPLES / "OpticalFlow", tmp_path / "ported") == FLOW_PORTED
    folder = tmp_path / "ported"
    return folder, load_module(folder / "flownet_models.py"), load_module(folder / "helper.py")


def test_flownet2_correlation_is_its_formula_in_nchw_and_asserts_nchw_as_written(flownet):
    import tensorflow as tf
    _, models, _ = flownet
    rng = np.random.RandomState(3)
    a, b = rng.normal(size=(2, 5, 7, 9)).astype("f4"), rng.normal(size=(2, 5, 7, 9)).astype("f4")
    for d, stride in [(4, 2), (2, 1)]:
        got = models.correlation(tf.constant(a), tf.constant(b), kernel_size=1, max_displacement=d, stride_1=1,
                                 stride_2=stride, pad=d, data_format="NCHW").numpy()
        assert got.shape == (2, (2 * d // stride + 1) ** 2, 7, 9)
        np.testing.assert_allclose(got, numpy_correlation(a, b, d, stride), rtol=1e-5, atol=1e-6)
    # its Python fallback takes NCHW only (an assert of the script's, as in tensorpack)
    with pytest.raises(AssertionError):
        models.correlation(tf.constant(a), tf.constant(b), kernel_size=1, max_displacement=4, stride_1=1,
                           stride_2=2, pad=4, data_format="NHWC")


def test_flownet2_c_predicts_the_flow_of_image_pairs_and_the_sintel_endpoint_error(flownet, tmp_path):
    folder, models, helper = flownet
    script = folder / "flownet2.py"
    flownet_weights(models, "flownet2-c", tmp_path / "flownet2-c.npz")
    try:
        check_flownet2_c(tmp_path, script, models, helper)
    finally:
        (tmp_path / "flownet2-c.npz").unlink()   # 157 MB


def check_flownet2_c(tmp_path: Path, script: Path, models: Any, helper: Any) -> None:
    """``flownet2.py --images`` (as written, then without windows) and ``--sintel_path`` with FlowNet2-C."""
    import cv2

    from trainstack.tensorpack import OfflinePredictor, PredictConfig, SmartInit
    from trainstack.tensorpack.utils import viz
    left, middle, right = frames(3)
    for i, image in enumerate((left, middle, right)):
        cv2.imwrite(str(tmp_path / f"frame{i}.png"), image)
    args = [script, "--images", "frame0.png", "frame1.png", "frame2.png", "--load", "flownet2-c.npz",
            "--model", "flownet2-c"]

    # the flow the model predicts, in this process, from the same weights; the script crops to multiples of 64
    predict = OfflinePredictor(PredictConfig(model=models.FlowNet2C(height=64, width=64),
                                             session_init=SmartInit(str(tmp_path / "flownet2-c.npz")),
                                             input_names=["left", "right"], output_names=["prediction"]))
    crop = [im[3:67, 8:72] for im in (left, middle, right)]   # imgaug.CenterCrop((64, 64)) of 70x80

    def flow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        (out,) = predict(*(x.astype("float32").transpose(2, 0, 1)[None] for x in (a, b)))
        assert out.shape == (1, 2, 64, 64)   # flow2 (16x16) x 20, resized 4x bilinearly
        return out[0]

    flows = [flow(crop[0], crop[1]), flow(crop[1], crop[2])]

    # as written: each pair is shown in a window after it is computed, and headless OpenCV has none
    done = subprocess.run([sys.executable, *map(str, args)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode != 0 and "cv2.imshow('flow output', img)" in done.stderr, done.stderr[-3000:]
    assert "The function is not implemented" in done.stderr and not (tmp_path / "flow_output000.png").exists()

    # with a window that a key closes at once: one image per consecutive pair, left | right over the flow
    out = run([NO_DISPLAY, *args], tmp_path)
    assert "run_without_display: shown [('flow output', (131, 131, 3)), ('flow output', (131, 131, 3))]" in out
    for k, (a, b) in enumerate(zip(crop, crop[1:])):
        written = cv2.imread(str(tmp_path / f"flow_output{k:03d}.png"))
        expected = viz.stack_patches([a, b, helper.Flow().visualize(flows[k].transpose(1, 2, 0)) * 255.], 2, 2)
        assert written.shape == (131, 131, 3)   # 2 x 64 and a border of 5% (3 pixels) between, ...
        assert np.abs(written.astype(int) - expected).max() <= 1
        assert written[67:, 67:].min() == 255   # ... the fourth cell empty
        assert written[67:, :64].std() > 0      # the flow's colours vary over the image

    # --sintel_path: each .flo of flow/<scene>/ with clean/<scene>/'s frame and the next; the average of the
    # per-pair mean endpoint error |prediction - ground truth|
    sintel = tmp_path / "sintel"
    rng = np.random.RandomState(4)
    truth = [rng.normal(scale=2.0, size=(70, 80, 2)).astype("f4") for _ in range(2)]
    for k, image in enumerate((left, middle, right), 1):
        (sintel / "clean" / "alley_1").mkdir(parents=True, exist_ok=True)
        cv2.imwrite(str(sintel / "clean" / "alley_1" / f"frame_{k:04d}.png"), image)
    for k, gt in enumerate(truth, 1):
        write_flo(sintel / "flow" / "alley_1" / f"frame_{k:04d}.flo", gt)
    out = run([script, "--load", "flownet2-c.npz", "--model", "flownet2-c", "--sintel_path", sintel], tmp_path)
    (aee,) = re.findall(r"average endpoint error \(AEE\): ([0-9.]+)", out)
    expected_aee = np.mean([np.linalg.norm(f - gt[3:67, 8:72].transpose(2, 0, 1), axis=0).mean()
                            for f, gt in zip(flows, truth)])
    assert float(aee) == pytest.approx(expected_aee, rel=1e-4)
    print(f"flownet2.py --model flownet2-c: flow magnitude {np.abs(flows[0]).mean():.3f}, AEE {aee}")


#: data_sampler.py's ImageEncode calls ndarray.tostring(), which NumPy 2 removed (tobytes() since NumPy 1.9)
TOSTRING = (b"cv2.imencode(mode, img)[1].tostring()", b"cv2.imencode(mode, img)[1].tobytes()")


def test_data_sampler_stops_at_numpys_removed_tostring_then_writes_the_lmdb_enet_pat_reads(tmp_path):
    import cv2
    from test_image_examples import change_line, load_module, script_folder

    from trainstack.tensorpack import LMDBSerializer
    write_coco_zip(tmp_path / "train2017.zip")
    assert port_folder(EXAMPLES / "SuperResolution", tmp_path / "ported") == SR_PORTED
    sampler = tmp_path / "ported" / "data_sampler.py"
    args = [sampler, "--lmdb", "train2017.lmdb", "--input", "train2017.zip", "--create"]
    done = subprocess.run([sys.executable, *map(str, args)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode != 0 and "has no attribute 'tostring'" in done.stderr, done.stderr[-3000:]
    change_line(sampler, *TOSTRING)
    for partial in tmp_path.glob("train2017.lmdb*"):   # what the failed run began, as tensorpack's save leaves it
        partial.unlink()
    run(args, tmp_path)
    ds = LMDBSerializer.load(str(tmp_path / "train2017.lmdb"), shuffle=False)
    ds.reset_state()
    decoded = [cv2.imdecode(dp[0], cv2.IMREAD_COLOR) for dp in ds]
    ds.ds.close()   # the LMDBData: lmdb opens a database once per process
    # the 16 images of at least 384x384, center-cropped to squares and resized to 256x256; the small one dropped
    assert len(decoded) == 16 and all(im.shape == (256, 256, 3) for im in decoded)
    # enet-pat.py's get_data('....lmdb'): decoded, cropped to 128x128 and shrunk to 32x32, in 3 workers, 16 a batch
    script = tmp_path / "ported" / "enet-pat.py"
    with script_folder(script):
        ds = load_module(script).get_data(str(tmp_path / "train2017.lmdb"))
        ds.reset_state()
        try:
            low, high = next(iter(ds))
        finally:
            ds.ds.close()   # the MultiProcessRunnerZMQ under BatchData: its worker processes
    assert low.shape == (16, 32, 32, 3) and high.shape == (16, 128, 128, 3) and high.dtype == np.uint8
