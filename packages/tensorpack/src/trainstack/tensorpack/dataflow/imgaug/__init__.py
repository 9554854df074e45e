"""tensorpack 0.11's ``tensorpack.dataflow.imgaug``: its names from ``trainstack.dataflow.imgaug``, and
``IAAugmentor``, ``Albumentations`` and ``deform``'s names of this layer."""
from trainstack.dataflow.imgaug import (
    Affine,
    Augmentor,
    AugmentorList,
    BackgroundFiller,
    Brightness,
    BrightnessScale,
    CenterCrop,
    CenterPaste,
    Clip,
    ColorSpace,
    ConstantBackgroundFiller,
    Contrast,
    CropTransform,
    Flip,
    FlipTransform,
    Gamma,
    GaussianBlur,
    GaussianNoise,
    GoogleNetRandomCropAndResize,
    Grayscale,
    Hue,
    Identity,
    ImageAugmentor,
    JpegNoise,
    Lighting,
    MapImage,
    MeanVarianceNormalize,
    MinMaxNormalize,
    PhotometricAugmentor,
    RandomApplyAug,
    RandomChooseAug,
    RandomCrop,
    RandomCropRandomShape,
    RandomCutout,
    RandomOrderAug,
    RandomPaste,
    RandomResize,
    Resize,
    ResizeShortestEdge,
    ResizeTransform,
    Rotation,
    RotationAndCropValid,
    SaltPepperNoise,
    Saturation,
    Shift,
    ToFloat32,
    ToUint8,
    Transform,
    TransformFactory,
    TransformList,
    Transpose,
)

from ..._replaced import stand_in_names, unprovided
from .deform import GaussianDeform, GaussianMap, np_sample
from .external import Albumentations, IAAugmentor

__all__ = [
    "Augmentor", "ImageAugmentor", "AugmentorList", "PhotometricAugmentor", "ColorSpace", "Grayscale", "ToUint8",
    "ToFloat32", "RandomCrop", "CenterCrop", "RandomCropRandomShape", "GoogleNetRandomCropAndResize",
    "RandomCutout", "Shift", "Rotation", "RotationAndCropValid", "Affine", "Hue", "Brightness", "BrightnessScale",
    "Contrast", "MeanVarianceNormalize", "GaussianBlur", "Gamma", "Clip", "Saturation", "Lighting",
    "MinMaxNormalize", "RandomChooseAug", "MapImage", "Identity", "RandomApplyAug", "RandomOrderAug", "Flip",
    "Resize", "RandomResize", "ResizeShortestEdge", "Transpose", "JpegNoise", "GaussianNoise", "SaltPepperNoise",
    "CenterPaste", "BackgroundFiller", "ConstantBackgroundFiller", "RandomPaste", "Transform", "ResizeTransform",
    "CropTransform", "FlipTransform", "TransformList", "TransformFactory", "IAAugmentor", "Albumentations",
    "GaussianMap", "np_sample", "GaussianDeform"
]

__all__ += stand_in_names(__name__)

__getattr__ = unprovided(__name__)
