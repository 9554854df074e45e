"""tensorpack 0.11's ``tensorpack.callbacks.graph``: its names from ``trainstack.callbacks``, and
``DumpTensorAsImage`` (alias ``DumpParamAsImage``) of this layer."""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from trainstack.callbacks import (
    CheckNumerics,
    DumpTensor,
    DumpTensors,
    ProcessTensors,
    RunOp,
    RunUpdateOps,
    get_logger_dir,
    to_numpy,
)
from trainstack.loop import Callback, RunContext, RunValues

from .._optional import require
from .._replaced import stand_in_names, unprovided
from .model_variables import model_variables

__all__ = ["RunOp", "RunUpdateOps", "ProcessTensors", "DumpTensors", "DumpTensor", "DumpTensorAsImage",
           "DumpParamAsImage", "CheckNumerics"] + stand_in_names(__name__)


class DumpTensorAsImage(Callback):
    """At each trigger, write a tensor's value as PNG image(s) ``<prefix>-ep<epoch>[-<i>].png`` (value x ``scale``,
    clipped to [0, 255]) to the logger directory (a prefix ``conv0/W`` in its ``conv0/``), and put it in the monitors as an image, as tensorpack's.

    The tensor is a variable of the model named as tensorpack named it (``conv0/W``: its current value), or a
    tensor the training step exposes by name (``tf.identity(x, name='viz')`` in ``build_graph``): fetched with
    every step, its last step's value (tensorpack evaluated such a tensor on one more datapoint at the trigger;
    TensorFlow 2 has no session to do so outside the step).
    """

    def __init__(self, tensor_name: str, prefix: str | None = None,
                 map_func: Callable[[np.ndarray], Any] | None = None, scale: float = 255) -> None:
        """
        Args:
            tensor_name: the tensor's name (``'conv0/W'`` or ``'conv0/W:0'``).
            prefix: the images' file name prefix; default the name without ``:0``.
            map_func: maps the value to an image or a list of images (HxW or HxWxC); default identity.
            scale: multiplies the pixel values, after ``map_func``.
        """
        self._cv2 = require("cv2", type(self).__name__, "opencv-python-headless")
        self.tensor_name = tensor_name if ":" in tensor_name else tensor_name + ":0"
        self._op_name = self.tensor_name.rsplit(":", 1)[0]
        self.func = map_func
        self.prefix = self._op_name if prefix is None else prefix
        self.log_dir = get_logger_dir()
        self.scale = scale
        self._variable: Any = None
        self._latest: Any = None

    def _setup_graph(self) -> None:
        self.log_dir = self.log_dir or get_logger_dir()
        if self.log_dir is None:
            raise RuntimeError(f"{type(self).__name__}({self.tensor_name!r}) writes its images to the logger "
                               "directory, and none is set: call logger.set_logger_dir() before training")
        self._variable = model_variables(self.trainer).get(self._op_name)

    def _before_run(self, ctx: RunContext) -> list[str] | None:
        return None if self._variable is not None else [self._op_name]

    def _after_run(self, run_context: RunContext, run_values: RunValues) -> None:
        if self._variable is None:
            self._latest = run_values.results[0]

    def _trigger(self) -> None:
        if self._variable is None and self._latest is None:
            return  # no step ran since training started
        val = to_numpy(self._variable if self._variable is not None else self._latest)
        if self.func is not None:
            val = self.func(val)
        if isinstance(val, list) or val.ndim == 4:
            for idx, im in enumerate(val):
                self._dump_image(im, idx)
        else:
            self._dump_image(val)
        assert self.trainer.monitors is not None  # set by setup_callbacks
        self.trainer.monitors.put_image(self.prefix, val)

    def _dump_image(self, im: np.ndarray, idx: int | None = None) -> None:
        if im.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}({self.tensor_name!r}): an image must be HxW or HxWxC, "
                             f"got shape {im.shape}; pass map_func= to make one")
        assert self.log_dir is not None  # set by _setup_graph
        suffix = "-" + str(idx) if idx else ""
        fname = os.path.join(self.log_dir, f"{self.prefix}-ep{self.epoch_num:03d}{suffix}.png")
        os.makedirs(os.path.dirname(fname), exist_ok=True)  # a prefix 'conv0/W' writes in conv0/
        if not self._cv2.imwrite(fname, np.clip(im * self.scale, 0, 255).astype("uint8")):
            raise OSError(f"{type(self).__name__}({self.tensor_name!r}): OpenCV could not write {fname}")


#: tensorpack's alias.
DumpParamAsImage = DumpTensorAsImage

__getattr__ = unprovided(__name__)
