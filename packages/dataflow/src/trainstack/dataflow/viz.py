"""Image grids and boxes for looking at data: tensorpack's ``tensorpack.utils.viz``.

``stack_patches``/``gen_stack_patches`` lay images out in a grid with the same rows, columns,
border and padding as tensorpack (checked pixel for pixel in tests/parity/test_parity_viz.py);
they need NumPy only. ``draw_boxes`` and ``interactive_imshow`` need OpenCV
(``pip install 'trainstack-dataflow[imgaug]'``), imported when first called, so importing
this module stays cheap. It lives in the dataflow layer because it has no TensorFlow in it.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

__all__ = ["interactive_imshow", "stack_patches", "gen_stack_patches", "draw_boxes", "draw_text",
           "NoDisplayError"]


class NoDisplayError(RuntimeError):
    """``interactive_imshow`` was called where no window can be shown."""


def _cv2(user: str) -> Any:
    try:
        import cv2
    except ImportError as e:
        raise ImportError(f"{user} needs OpenCV: pip install 'trainstack-dataflow[imgaug]'") from e
    return cv2


def _has_display() -> bool:
    if sys.platform in ("win32", "darwin"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def interactive_imshow(img: np.ndarray, lclick_cb: Callable[..., Any] | None = None,
                       rclick_cb: Callable[..., Any] | None = None, **kwargs: Callable[..., Any]) -> None:
    """Show ``img`` (BGR) in an OpenCV window and wait for a key.

    ``lclick_cb``/``rclick_cb``: ``func(img, x, y)`` on a left/right click; ``key_cb_<k>=func(img)``
    for key ``k``. Keys: q closes the window, x exits, s saves ``out.png``, +/- zoom.
    Without a display (no ``$DISPLAY``/``$WAYLAND_DISPLAY``) raises :class:`NoDisplayError`.
    """
    if not _has_display():
        raise NoDisplayError("interactive_imshow needs a display ($DISPLAY or $WAYLAND_DISPLAY is not set); "
                             "write the image with cv2.imwrite instead")
    cv2 = _cv2("interactive_imshow")
    name = "tensorpack_viz_window"
    try:
        cv2.imshow(name, img)
    except cv2.error as e:  # headless OpenCV builds have no GUI
        raise NoDisplayError(f"OpenCV cannot open a window here ({e}); install opencv-python (not "
                             "-headless) or write the image with cv2.imwrite") from e

    def mouse_cb(event: int, x: int, y: int, *args: Any) -> None:
        if event == cv2.EVENT_LBUTTONUP and lclick_cb is not None:
            lclick_cb(img, x, y)
        elif event == cv2.EVENT_RBUTTONUP and rclick_cb is not None:
            rclick_cb(img, x, y)
    cv2.setMouseCallback(name, mouse_cb)
    key = cv2.waitKey(-1)
    while key >= 128:
        key = cv2.waitKey(-1)
    key = chr(key & 0xff)
    cb_name = "key_cb_" + key
    if cb_name in kwargs:
        kwargs[cb_name](img)
    elif key == "q":
        cv2.destroyWindow(name)
    elif key == "x":
        sys.exit()
    elif key == "s":
        cv2.imwrite("out.png", img)
    elif key in ("+", "="):
        img = cv2.resize(img, None, fx=1.3, fy=1.3, interpolation=cv2.INTER_CUBIC)
        interactive_imshow(img, lclick_cb, rclick_cb, **kwargs)
    elif key == "-":
        img = cv2.resize(img, None, fx=0.7, fy=0.7, interpolation=cv2.INTER_CUBIC)
        interactive_imshow(img, lclick_cb, rclick_cb, **kwargs)


def _preprocess_patch_list(plist: Any) -> np.ndarray:
    try:
        plist = np.asarray(plist)
    except ValueError as e:  # NumPy >= 1.24 refuses ragged lists
        raise ValueError(f"patches of different shapes: pass pad=True to stack_patches ({e})") from e
    if plist.dtype == object:
        raise ValueError("patches of different shapes: pass pad=True to stack_patches, or patches of one shape")
    if plist.ndim == 3:
        plist = plist[:, :, :, np.newaxis]
    if plist.ndim != 4 or plist.shape[3] not in (1, 3):
        raise ValueError(f"patches must be NHW or NHWC with 1 or 3 channels, got shape {plist.shape}")
    return plist


def _pad_patch_list(plist: Sequence[np.ndarray], bgcolor: int | Sequence[int]) -> np.ndarray:
    if isinstance(bgcolor, int):
        bgcolor = (bgcolor, bgcolor, bgcolor)
    padded = []
    for p in plist:
        p = np.asarray(p)
        if p.ndim == 2:
            p = p[:, :, np.newaxis]
        if p.shape[2] == 1:
            p = np.repeat(p, 3, 2)
        padded.append(p)
    ph = max(p.shape[0] for p in padded)
    pw = max(p.shape[1] for p in padded)
    ret = np.zeros((len(padded), ph, pw, 3), dtype=padded[0].dtype)
    ret[:, :, :] = bgcolor
    for idx, p in enumerate(padded):
        sh, sw = (ph - p.shape[0]) // 2, (pw - p.shape[1]) // 2
        ret[idx, sh:sh + p.shape[0], sw:sw + p.shape[1], :] = p
    return ret


class Canvas:
    """A uint8 grid of ``nr_row`` x ``nr_col`` cells of ``ph`` x ``pw``, ``border`` pixels apart."""

    def __init__(self, ph: int, pw: int, nr_row: int, nr_col: int, channel: int, border: int | None,
                 bgcolor: int | Sequence[int]) -> None:
        if nr_row < 1 or nr_col < 1:
            raise ValueError(f"the grid needs at least one row and column, got {nr_row}x{nr_col}")
        self.ph, self.pw, self.nr_row, self.nr_col = ph, pw, nr_row, nr_col
        if border is None:
            border = int(0.05 * min(ph, pw))
        self.border = border
        self.bgcolor = bgcolor
        self.channel = max(channel, 1 if isinstance(bgcolor, int) else 3)
        self.canvas = np.zeros((nr_row * (ph + border) - border, nr_col * (pw + border) - border,
                                self.channel), dtype="uint8")

    def draw_patches(self, plist: np.ndarray) -> None:
        """Fill the background, then the patches row by row."""
        if self.nr_row * self.nr_col < len(plist):
            raise ValueError(f"{len(plist)} patches do not fit in a {self.nr_row}x{self.nr_col} grid")
        if self.channel == 3 and plist.shape[3] == 1:
            plist = np.repeat(plist, 3, axis=3)
        if self.channel == 1:
            self.canvas.fill(self.bgcolor)
        else:
            self.canvas[:, :, :] = self.bgcolor
        for i, patch in enumerate(plist):
            r0 = (i // self.nr_col) * (self.ph + self.border)
            c0 = (i % self.nr_col) * (self.pw + self.border)
            self.canvas[r0:r0 + self.ph, c0:c0 + self.pw] = patch

    def get_patchid_from_coord(self, x: int, y: int) -> int:
        """The index of the patch at pixel ``(x, y)``."""
        return (y // (self.ph + self.border)) * self.nr_col + x // (self.pw + self.border)


def stack_patches(patch_list: Any, nr_row: int, nr_col: int, border: int | None = None, pad: bool = False,
                  bgcolor: int | Sequence[int] = 255, viz: bool = False,
                  lclick_cb: Callable[..., Any] | None = None) -> np.ndarray:
    """Stack NHW or NHWC images in [0, 255] into one ``nr_row`` x ``nr_col`` grid (uint8, HWC).

    Args:
        border: pixels between cells; default ``int(0.05 * min(patch height, width))``.
        pad: centre patches of different shapes in cells of the largest one.
        bgcolor: an int or a BGR tuple for the background and border.
        viz, lclick_cb: show the result with :func:`interactive_imshow`; ``lclick_cb(patch, index)``.
    """
    if pad:
        patch_list = _pad_patch_list(patch_list, bgcolor)
    patch_list = _preprocess_patch_list(patch_list)
    if lclick_cb is not None:
        viz = True
    ph, pw = patch_list.shape[1:3]
    canvas = Canvas(ph, pw, nr_row, nr_col, patch_list.shape[-1], border, bgcolor)
    canvas.draw_patches(patch_list)
    if viz:
        callback = None
        if lclick_cb is not None:
            def callback(img: np.ndarray, x: int, y: int) -> None:
                idx = canvas.get_patchid_from_coord(x, y)
                if idx < len(patch_list):
                    lclick_cb(patch_list[idx], idx)
        interactive_imshow(canvas.canvas, lclick_cb=callback)
    return canvas.canvas


def gen_stack_patches(patch_list: Any, nr_row: int | None = None, nr_col: int | None = None,
                      border: int | None = None, max_width: int = 1000, max_height: int = 1000,
                      bgcolor: int | Sequence[int] = 255, viz: bool = False,
                      lclick_cb: Callable[..., Any] | None = None) -> Iterator[np.ndarray]:
    """Yield one grid per ``nr_row * nr_col`` patches of a long list (the last possibly part-filled).

    When ``nr_row``/``nr_col`` are None they are as many as fit in ``max_height``/``max_width``.
    As in tensorpack, every grid yielded is the same array, redrawn: copy it to keep it.
    """
    patch_list = _preprocess_patch_list(patch_list)
    if lclick_cb is not None:
        viz = True
    ph, pw = patch_list.shape[1:3]
    if border is None:
        border = int(0.05 * min(ph, pw))
    if nr_row is None:
        nr_row = int(max_height / (ph + border))
    if nr_col is None:
        nr_col = int(max_width / (pw + border))
    canvas = Canvas(ph, pw, nr_row, nr_col, patch_list.shape[-1], border, bgcolor)
    nr_patch = nr_row * nr_col
    for start in range(0, len(patch_list), nr_patch):
        end = min(start + nr_patch, len(patch_list))
        canvas.draw_patches(patch_list[start:end])
        if viz:
            callback = None
            if lclick_cb is not None:
                def callback(img: np.ndarray, x: int, y: int, start: int = start, end: int = end) -> None:
                    idx = canvas.get_patchid_from_coord(x, y) + start
                    if idx < end:
                        lclick_cb(patch_list[idx], idx)
            interactive_imshow(canvas.canvas, lclick_cb=callback)
        yield canvas.canvas


def draw_text(img: np.ndarray, pos: Sequence[float], text: str, color: Sequence[int],
              font_scale: float = 0.4) -> np.ndarray:
    """``img`` as uint8 with ``text`` on a ``color`` background at ``pos`` (x, y), kept inside the image."""
    cv2 = _cv2("draw_text")
    img = img.astype(np.uint8)
    x0, y0 = int(pos[0]), int(pos[1])
    font = cv2.FONT_HERSHEY_SIMPLEX
    ((text_w, text_h), _) = cv2.getTextSize(text, font, font_scale, 1)
    if x0 + text_w > img.shape[1]:
        x0 = img.shape[1] - text_w
    if y0 - int(1.15 * text_h) < 0:
        y0 = int(1.15 * text_h)
    cv2.rectangle(img, (x0, y0 - int(1.3 * text_h)), (x0 + text_w, y0), color, -1)
    cv2.putText(img, text, (x0, y0 - int(0.25 * text_h)), font, font_scale, (222, 222, 222),
                lineType=cv2.LINE_AA)
    return img


def draw_boxes(im: np.ndarray, boxes: Any, labels: Sequence[str] | None = None,
               color: Sequence[int] | None = None) -> np.ndarray:
    """A copy of ``im`` (BGR, or gray made BGR) with ``boxes`` (N x [x1, y1, x2, y2]) drawn, largest first.

    ``labels``: one string per box, drawn at its top-left corner; ``color``: BGR, default (15, 128, 15).
    """
    cv2 = _cv2("draw_boxes")
    boxes = np.asarray(boxes, dtype="int32")
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(f"boxes must be N x 4 ([x1, y1, x2, y2] each), got shape {boxes.shape}")
    if labels is not None and len(labels) != len(boxes):
        raise ValueError(f"{len(labels)} labels for {len(boxes)} boxes")
    if len(boxes) == 0:
        return im.copy() if im.ndim == 3 and im.shape[2] == 3 else cv2.cvtColor(im, cv2.COLOR_GRAY2BGR)
    areas = (boxes[:, 2] - boxes[:, 0] + 1) * (boxes[:, 3] - boxes[:, 1] + 1)
    if areas.min() <= 0:
        raise ValueError(f"boxes must have x2 >= x1 and y2 >= y1, got\n{boxes}")
    # equality allowed: tensorpack is not strict about rounding here
    if (boxes[:, 0].min() < 0 or boxes[:, 1].min() < 0 or boxes[:, 2].max() > im.shape[1]
            or boxes[:, 3].max() > im.shape[0]):
        raise ValueError(f"boxes outside the image of shape {im.shape}:\n{boxes}")
    sorted_inds = np.argsort(-areas)  # large ones first
    im = im.copy()
    if color is None:
        color = (15, 128, 15)
    if im.ndim == 2 or (im.ndim == 3 and im.shape[2] == 1):
        im = cv2.cvtColor(im, cv2.COLOR_GRAY2BGR)
    for i in sorted_inds:
        box = boxes[i, :]
        if labels is not None:
            im = draw_text(im, (box[0], box[1]), labels[i], color=color)
        cv2.rectangle(im, (int(box[0]), int(box[1])), (int(box[2]), int(box[3])), color=color, thickness=1)
    return im
