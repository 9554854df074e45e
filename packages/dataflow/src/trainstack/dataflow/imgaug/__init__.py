"""trainstack.dataflow.imgaug: tensorpack 0.11's image augmentors, pixel for pixel.

An augmentor draws its random parameters in ``get_transform(img)`` and returns a deterministic
Transform, which applies the same change to the image (``apply_image``), to other images of
the datapoint and to Nx2 (x, y) coordinates (``apply_coords``). With the same seed, every
augmentor here gives the same pixels and coordinates as tensorpack's (tests/parity/
test_parity_imgaug.py). Augmentors written for tensorpack's older API (``_get_augment_params``
/ ``_augment`` / ``_augment_coords``) run unchanged.

Importing this package needs no OpenCV; the augmentors import it on first use (install
``trainstack-dataflow[imgaug]``). Use them through :class:`~trainstack.dataflow.AugmentImageComponent`
and friends, which copy the images and reseed the augmentors in ``reset_state``.
"""
from .base import Augmentor, AugmentorList, ImageAugmentor, ImagePlaceholder, PhotometricAugmentor
from .convert import ColorSpace, Grayscale, ToFloat32, ToUint8
from .crop import CenterCrop, GoogleNetRandomCropAndResize, RandomCrop, RandomCropRandomShape, RandomCutout
from .geometry import Affine, Rotation, RotationAndCropValid, Shift
from .imgproc import (
                        Brightness,
                        BrightnessScale,
                        Clip,
                        Contrast,
                        Gamma,
                        GaussianBlur,
                        Hue,
                        Lighting,
                        MeanVarianceNormalize,
                        MinMaxNormalize,
                        Saturation,
)
from .meta import Identity, MapImage, RandomApplyAug, RandomChooseAug, RandomOrderAug
from .misc import Flip, RandomResize, Resize, ResizeShortestEdge, Transpose
from .noise import GaussianNoise, JpegNoise, SaltPepperNoise
from .paste import BackgroundFiller, CenterPaste, ConstantBackgroundFiller, RandomPaste
from .transform import (
                        BaseTransform,
                        CropTransform,
                        FlipTransform,
                        LazyTransform,
                        NoOpTransform,
                        PhotometricTransform,
                        ResizeTransform,
                        Transform,
                        TransformAugmentorBase,
                        TransformFactory,
                        TransformList,
                        TransposeTransform,
                        WarpAffineTransform,
)

__all__ = [
    # base classes and transforms
    "ImageAugmentor", "Augmentor", "PhotometricAugmentor", "AugmentorList", "ImagePlaceholder",
    "BaseTransform", "Transform", "TransformList", "TransformFactory", "LazyTransform", "NoOpTransform",
    "PhotometricTransform", "ResizeTransform", "CropTransform", "FlipTransform", "TransposeTransform",
    "WarpAffineTransform", "TransformAugmentorBase",
    # composition
    "Identity", "MapImage", "RandomApplyAug", "RandomChooseAug", "RandomOrderAug",
    # geometry: resize, flip, crop, warp, paste
    "Flip", "Transpose", "Resize", "ResizeShortestEdge", "RandomResize",
    "RandomCrop", "CenterCrop", "RandomCropRandomShape", "GoogleNetRandomCropAndResize", "RandomCutout",
    "Shift", "Rotation", "RotationAndCropValid", "Affine",
    "CenterPaste", "RandomPaste", "BackgroundFiller", "ConstantBackgroundFiller",
    # pixels: photometric, noise, conversions
    "Brightness", "BrightnessScale", "Contrast", "Saturation", "Hue", "Lighting", "Gamma", "GaussianBlur",
    "Clip", "MeanVarianceNormalize", "MinMaxNormalize",
    "GaussianNoise", "SaltPepperNoise", "JpegNoise",
    "ColorSpace", "Grayscale", "ToUint8", "ToFloat32",
]
