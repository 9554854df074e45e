"""trainstack.dataflow.viz: grid layout (rows, columns, border, padding, background) computed
from the formula, the generator's pages, boxes drawn on their edges, and clear errors."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from trainstack.dataflow import viz


def patches(n, h=10, w=6, c=None, seed=0):
    shape = (n, h, w) if c is None else (n, h, w, c)
    return np.random.RandomState(seed).randint(0, 200, size=shape).astype(np.uint8)


def test_stack_patches_layout_follows_the_formula():
    p = patches(5, h=10, w=6, c=3)
    grid = viz.stack_patches(p, nr_row=2, nr_col=3, border=2, bgcolor=(1, 2, 3))
    assert grid.shape == (2 * (10 + 2) - 2, 3 * (6 + 2) - 2, 3) and grid.dtype == np.uint8
    for i in range(5):
        r, c = divmod(i, 3)
        np.testing.assert_array_equal(grid[r * 12:r * 12 + 10, c * 8:c * 8 + 6], p[i])
    mask = np.ones(grid.shape[:2], bool)
    for i in range(5):
        r, c = divmod(i, 3)
        mask[r * 12:r * 12 + 10, c * 8:c * 8 + 6] = False
    assert (grid[mask] == (1, 2, 3)).all()             # borders and the empty sixth cell


def test_default_border_and_gray_patches():
    p = patches(4, h=40, w=60)                         # NHW
    grid = viz.stack_patches(p, 2, 2)                  # border int(0.05 * 40) = 2, bgcolor 255, one channel
    assert grid.shape == (2 * 42 - 2, 2 * 62 - 2, 1)
    np.testing.assert_array_equal(grid[42:82, 62:122, 0], p[3])
    assert (grid[40:42] == 255).all()
    color = viz.stack_patches(p, 2, 2, bgcolor=(0, 0, 255))   # a color background makes it 3 channels
    assert color.shape[2] == 3 and (color[40, 0] == (0, 0, 255)).all()
    np.testing.assert_array_equal(color[:40, :60, 1], p[0])


def test_pad_centres_patches_of_different_shapes():
    a = np.full((4, 6, 3), 10, np.uint8)
    b = np.full((2, 2), 20, np.uint8)
    grid = viz.stack_patches([a, b], 1, 2, border=1, pad=True, bgcolor=0)
    assert grid.shape == (4, 13, 3)
    assert (grid[:, :6] == 10).all()
    cell = grid[:, 7:]
    assert (cell[1:3, 2:4] == 20).all() and cell.sum() == 20 * 4 * 3   # centred, rest background


def test_gen_stack_patches_pages():
    p = patches(7, h=5, w=5, c=1)
    pages = [g.copy() for g in viz.gen_stack_patches(p, nr_row=1, nr_col=3, border=1, bgcolor=9)]
    assert len(pages) == 3
    for k, page in enumerate(pages):
        for j in range(3):
            i = 3 * k + j
            cell = page[:, j * 6:j * 6 + 5, 0]
            if i < 7:
                np.testing.assert_array_equal(cell, p[i, :, :, 0])
            else:
                assert (cell == 9).all()                 # the last page is redrawn on a clean background
    auto = next(viz.gen_stack_patches(p, max_width=12, max_height=100))   # border 0: 2 columns, 20 rows
    assert auto.shape == (100, 10, 1)


def test_bad_patches_are_refused():
    with pytest.raises(ValueError, match="do not fit in a 1x2 grid"):
        viz.stack_patches(patches(3), 1, 2)
    with pytest.raises(ValueError, match="NHW or NHWC"):
        viz.stack_patches(np.zeros((2, 4, 4, 2), np.uint8), 1, 2)
    with pytest.raises(ValueError, match="pad=True"):
        viz.stack_patches([np.zeros((4, 4)), np.zeros((3, 3))], 1, 2)


def test_draw_boxes_draws_edges_and_leaves_input_alone():
    pytest.importorskip("cv2")
    im = np.zeros((20, 30), np.uint8)
    out = viz.draw_boxes(im, [[2, 3, 12, 9]], color=(255, 0, 0))
    assert im.sum() == 0 and out.shape == (20, 30, 3)
    edge = np.zeros((20, 30), bool)
    edge[3, 2:13] = edge[9, 2:13] = edge[3:10, 2] = edge[3:10, 12] = True
    assert (out[edge] == (255, 0, 0)).all() and (out[~edge] == 0).all()
    labelled = viz.draw_boxes(np.zeros((40, 60, 3), np.uint8), [[5, 20, 50, 35]], labels=["cat"])
    assert (labelled[20, 5:51] == (15, 128, 15)).all()     # default color; text drawn above the box
    assert (labelled[:20] != 0).any()


def test_draw_boxes_errors():
    pytest.importorskip("cv2")
    im = np.zeros((10, 10, 3), np.uint8)
    with pytest.raises(ValueError, match="outside the image"):
        viz.draw_boxes(im, [[0, 0, 11, 5]])
    with pytest.raises(ValueError, match="x2 >= x1"):
        viz.draw_boxes(im, [[5, 5, 2, 8]])
    with pytest.raises(ValueError, match="2 labels for 1 boxes"):
        viz.draw_boxes(im, [[0, 0, 5, 5]], labels=["a", "b"])


def test_interactive_imshow_without_a_display(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    with pytest.raises(viz.NoDisplayError, match="needs a display"):
        viz.interactive_imshow(np.zeros((4, 4, 3), np.uint8))
    with pytest.raises(viz.NoDisplayError):
        viz.stack_patches(patches(1), 1, 1, viz=True)


def test_without_opencv_draw_boxes_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cv2", None)
    with pytest.raises(ImportError, match=r"pip install 'trainstack-dataflow\[imgaug\]'"):
        viz.draw_boxes(np.zeros((4, 4, 3), np.uint8), [[0, 0, 1, 1]])
    assert viz.stack_patches(patches(1), 1, 1).shape == (10, 6, 1)   # grids need NumPy only


def test_importing_dataflow_and_viz_imports_no_opencv_nor_tensorflow():
    code = ("import sys, trainstack.dataflow, trainstack.dataflow.viz, trainstack.dataflow.dataset; "
            "print(sorted(m for m in ('cv2', 'tensorflow', 'scipy', 'lmdb', 'h5py', 'zmq') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"
