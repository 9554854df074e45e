"""A whole training run in one call: TrainConfig and launch_train_with_config.

The top of the current API (tensorpack's ``train/config.py`` and ``train/interface.py``):
it picks the input and the defaults for any trainer.
"""
from .config import AutoResumeTrainConfig, LoopStateInit, TrainConfig
from .launch import apply_default_prefetch, launch_train_with_config

__all__ = ["TrainConfig", "AutoResumeTrainConfig", "LoopStateInit", "launch_train_with_config",
           "apply_default_prefetch"]
