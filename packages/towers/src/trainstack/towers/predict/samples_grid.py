"""GeneratorSamplesGrid: a grid of a generator's samples in TensorBoard at every epoch.

tensorpack's GAN examples ran the generator by hand after training (an
``OfflinePredictor`` of ``z -> gen/viz``, then ``stack_patches``) to look at
samples; this callback does it while training: at each trigger (after every
epoch by default) it runs an online predictor of the trainer's model on inputs
from ``sampler``, lays the outputs out with
:func:`trainstack.dataflow.viz.stack_patches` and puts the grid to
``trainer.monitors`` as an image (``TFEventWriter`` writes it to TensorBoard).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from trainstack.dataflow.viz import stack_patches
from trainstack.loop import Callback
from trainstack.loop.checks import check_bool, check_int

__all__ = ["GeneratorSamplesGrid"]

logger = logging.getLogger("trainstack.towers")

Arrays = Any  # an array, or a sequence of arrays (one per input name)


class GeneratorSamplesGrid(Callback):
    """Put a ``nr_row`` x ``nr_col`` grid of the generator's outputs to the monitors at each trigger.

    Args:
        input_names: the inputs the predictor is given (e.g. ``["z"]``); inputs of the tower
            function left out are filled with zeros, and tensors made with
            TensorFlow's own ``tf.compat.v1.placeholder_with_default`` inside the tower may be named (see
            :class:`OnlinePredictor`).
        output_name: the tensor in the tower holding images, NHW or NHWC with 1 or 3 channels
            (e.g. ``"gen/viz"``).
        sampler: either a callable ``sampler(n) -> array or [array, ...]`` called at every
            trigger with ``n = nr_row * nr_col`` (new samples each time), or the inputs
            themselves (an array, or one array per input name) used at every trigger (the same
            samples, to watch them change); they must hold at most ``nr_row * nr_col`` samples.
        nr_row, nr_col, border, bgcolor: the grid's layout, as in ``stack_patches``.
        tag: the image's name in TensorBoard.
        postprocess: applied to the batch of outputs first, e.g. ``lambda x: (x + 1) * 127.5``
            for a ``tanh`` generator. The result is clipped to [0, 255]; TensorBoard shows it
            as RGB (reverse the channels here for BGR images).
        device: the predictor's GPU index (the CPU when there is no GPU), as in
            ``trainer.get_predictor``.
        before_train: also draw a grid before the first step (the untrained generator).

    The last grid is kept in ``last_grid``. Chief-only, as every callback by default.
    """

    def __init__(self, input_names: str | Sequence[str], output_name: str,
                 sampler: Callable[[int], Arrays] | Arrays, nr_row: int = 8, nr_col: int = 8,
                 tag: str = "generated_samples", postprocess: Callable[[np.ndarray], Any] | None = None,
                 border: int | None = None, bgcolor: int | Sequence[int] = 255, device: int = 0,
                 before_train: bool = False) -> None:
        names = [input_names] if isinstance(input_names, str) else list(input_names)
        if not names or not all(isinstance(n, str) and n for n in names):
            raise TypeError(f"GeneratorSamplesGrid(input_names=...) must be a name or a non-empty list of "
                            f"names, got {input_names!r}")
        if not isinstance(output_name, str) or not output_name:
            raise TypeError(f"GeneratorSamplesGrid(output_name=...) must be a tensor name, got {output_name!r}")
        if not isinstance(tag, str) or not tag:
            raise TypeError(f"GeneratorSamplesGrid(tag=...) must be a non-empty string, got {tag!r}")
        if postprocess is not None and not callable(postprocess):
            raise TypeError(f"GeneratorSamplesGrid(postprocess=...) must be callable, got {postprocess!r}")
        self.input_names = names
        self.output_name = output_name
        self.nr_row = check_int("GeneratorSamplesGrid", "nr_row", nr_row, minimum=1)
        self.nr_col = check_int("GeneratorSamplesGrid", "nr_col", nr_col, minimum=1)
        self.tag = tag
        self.postprocess = postprocess
        self.border = border
        self.bgcolor = bgcolor
        self.device = device
        self.run_before_train = check_bool(type(self).__name__, "before_train", before_train)
        self.last_grid: np.ndarray | None = None
        self._sampler: Callable[[int], Arrays] | None = sampler if callable(sampler) else None
        self._fixed: list[np.ndarray] | None = None
        if self._sampler is None:
            self._fixed = self._check_inputs(sampler, "the inputs given as sampler")

    def _default_name(self) -> str:
        return f"GeneratorSamplesGrid({self.tag})"

    @property
    def num_samples(self) -> int:
        """The cells of the grid: how many samples a callable sampler is asked for."""
        return self.nr_row * self.nr_col

    # -- hooks ------------------------------------------------------------------------------------
    def _setup_graph(self) -> None:
        get_predictor = getattr(self.trainer, "get_predictor", None)
        if get_predictor is None:
            raise TypeError(f"{self.name} runs the generator with trainer.get_predictor(), which "
                            f"{type(self.trainer).__name__} does not have (use a TowerTrainer such as "
                            "SimpleTrainer)")
        self.predictor = get_predictor(self.input_names, [self.output_name], device=self.device)

    def _before_train(self) -> None:
        if self.run_before_train:
            self._trigger()

    def _trigger(self) -> None:
        inputs = self._fixed if self._fixed is not None else self._check_inputs(
            self._sampler(self.num_samples),  # type: ignore[misc]  # a sampler when no fixed inputs
            f"what sampler({self.num_samples}) returned")
        (outputs,) = self.predictor(*inputs)
        grid = stack_patches(self._to_images(outputs), self.nr_row, self.nr_col, border=self.border,
                             bgcolor=self.bgcolor)
        self.last_grid = grid
        assert self.trainer.monitors is not None
        self.trainer.monitors.put_image(self.tag, grid)

    # -- checks -----------------------------------------------------------------------------------
    def _check_inputs(self, value: Arrays, what: str) -> list[np.ndarray]:
        """One array per input name, all with the same number (1..cells) of samples."""
        n_in = len(self.input_names)
        if n_in == 1 and not isinstance(value, (list, tuple)):
            value = [value]
        if not isinstance(value, (list, tuple)) or len(value) != n_in:
            raise ValueError(f"GeneratorSamplesGrid: {what} must be {'an array or ' if n_in == 1 else ''}"
                             f"a list of {n_in} arrays, one per input {self.input_names}, got {value!r:.200}")
        arrays = [np.asarray(v) for v in value]
        lengths = {name: (a.shape[0] if a.ndim else None) for name, a in zip(self.input_names, arrays)}
        if len(set(lengths.values())) != 1 or None in lengths.values():
            raise ValueError(f"GeneratorSamplesGrid: {what} must be batches of the same number of samples, "
                             f"got first dimensions {lengths}")
        n = next(iter(lengths.values()))
        assert n is not None  # refused above
        if not 1 <= n <= self.num_samples:
            raise ValueError(f"GeneratorSamplesGrid: {what} hold {n} samples; a {self.nr_row}x{self.nr_col} "
                             f"grid shows 1 to {self.num_samples}")
        return arrays

    def _to_images(self, outputs: Any) -> np.ndarray:
        images = np.asarray(outputs if self.postprocess is None else self.postprocess(outputs))
        if images.ndim not in (3, 4) or (images.ndim == 4 and images.shape[3] not in (1, 3)):
            raise ValueError(f"{self.name}: {self.output_name!r}{' after postprocess' if self.postprocess else ''} "
                             f"has shape {images.shape}; expected images, NHW or NHWC with 1 or 3 channels")
        if not np.issubdtype(images.dtype, np.number) or np.issubdtype(images.dtype, np.complexfloating):
            raise ValueError(f"{self.name}: {self.output_name!r} has dtype {images.dtype}; expected real numbers")
        if images.dtype != np.uint8:
            images = np.clip(images, 0, 255)
        return images
