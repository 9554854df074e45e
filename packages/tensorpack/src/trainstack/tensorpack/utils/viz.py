"""tensorpack 0.11's ``tensorpack.utils.viz`` (``stack_patches`` & co.: ``trainstack.dataflow.viz``'s)."""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from trainstack.dataflow.viz import draw_boxes, gen_stack_patches, interactive_imshow, stack_patches

from .._replaced import unprovided
from .argtools import shape2d
from .fs import mkdir_p

__all__ = ["interactive_imshow", "stack_patches", "gen_stack_patches", "dump_dataflow_images", "intensity_to_rgb",
           "draw_boxes"]


def dump_dataflow_images(df: Any, index: int = 0, batched: bool = True, number: int = 1000,
                         output_dir: str | None = None, scale: float = 1, resize: Any = None, viz: Any = None,
                         flipRGB: bool = False) -> None:  # noqa: N803 - tensorpack's argument name
    """Write the images of component ``index`` of ``df`` to ``output_dir`` as ``001.jpg``, ``002.jpg``, ...
    (OpenCV), and/or show them in grids of ``viz`` (rows, columns), as tensorpack's: it stops before the
    ``number``-th image, so ``number - 1`` are written."""
    import cv2  # noqa: PLC0415 - OpenCV, the dataflow layer's imgaug extra

    if output_dir:
        mkdir_p(output_dir)
    vizsize = 0
    if viz is not None:
        viz = shape2d(viz)
        vizsize = viz[0] * viz[1]
    if resize is not None:
        resize = tuple(shape2d(resize))
    vizlist: list[Any] = []
    df.reset_state()
    cnt = 0
    while True:
        for dp in df:
            imgbatch = dp[index] if batched else [dp[index]]
            for img in imgbatch:
                cnt += 1
                if cnt == number:
                    return
                if scale != 1:
                    img = img * scale
                if resize is not None:
                    img = cv2.resize(img, resize)
                if flipRGB:
                    img = img[:, :, ::-1]
                if output_dir:
                    cv2.imwrite(os.path.join(output_dir, f"{cnt:03d}.jpg"), img)
                if viz is not None:
                    vizlist.append(img)
            if viz is not None and len(vizlist) >= vizsize:
                stack_patches(vizlist[:vizsize], nr_row=viz[0], nr_col=viz[1], viz=True)
                vizlist = vizlist[vizsize:]


def intensity_to_rgb(intensity: np.ndarray, cmap: str = "cubehelix", normalize: bool = False) -> np.ndarray:
    """A 2D array of intensities as an RGB float32 image in [0, 255] through a matplotlib colormap
    (matplotlib needed, as for tensorpack's)."""
    if intensity.ndim != 2:
        raise AssertionError(intensity.shape)
    try:
        import matplotlib  # noqa: PLC0415 - optional, as in tensorpack
    except ImportError:
        raise ImportError("intensity_to_rgb() needs matplotlib: pip install matplotlib") from None
    intensity = intensity.astype("float")
    if normalize:
        intensity -= intensity.min()
        intensity /= intensity.max()
    colors = matplotlib.colormaps[cmap](intensity)[..., :3]
    return colors.astype("float32") * 255.0


__getattr__ = unprovided(__name__)
