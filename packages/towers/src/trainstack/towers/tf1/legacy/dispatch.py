"""The older forms as the trainers reach them: this layer's :class:`LegacyAPI`, registered on import.

The trainers do not import this layer (it sits on top of them); they ask
:mod:`trainstack.towers.trainers.legacy_hook` for what :func:`register` put there.
"""
from __future__ import annotations

from typing import Any

from ...run.config import TrainConfig
from ...trainers import legacy_hook
from .compat import bind_legacy_config, train_legacy
from .compat_multigpu import build_on_multi_tower, legacy_devices, legacy_options

__all__ = ["OlderForms", "register"]


class OlderForms:
    """:class:`~trainstack.towers.trainers.legacy_hook.LegacyAPI` of compat.py and compat_multigpu.py."""

    bind = staticmethod(bind_legacy_config)
    train = staticmethod(train_legacy)
    devices = staticmethod(legacy_devices)
    options = staticmethod(legacy_options)
    build_on_multi_tower = staticmethod(build_on_multi_tower)

    @staticmethod
    def is_config(obj: Any) -> bool:
        return isinstance(obj, TrainConfig)


def register() -> None:
    """Let the trainers take the older forms (``SimpleTrainer(config)``, ...)."""
    legacy_hook.register(OlderForms())
