"""tensorpack 0.11's ``tensorpack.callbacks.monitor`` (from ``trainstack.callbacks`` and ``trainstack.loop``;
``SendMonitorData`` and ``CometMLMonitor`` are tensorpack's)."""
from __future__ import annotations

import os
from typing import Any

from trainstack.callbacks import JSONWriter, ScalarPrinter, TFEventWriter, logger
from trainstack.loop import MonitorBase, Monitors

from .._optional import require
from .._replaced import stand_in_names, unprovided
from .._version import __version__
from .model_variables import model_variables

__all__ = ["MonitorBase", "Monitors", "TFEventWriter", "JSONWriter", "ScalarPrinter",
           "SendMonitorData", "CometMLMonitor"] + stand_in_names(__name__)


class SendMonitorData(MonitorBase):
    """Runs the shell command ``command.format(**stats)`` once every scalar of ``names`` has a value, after
    each step and epoch (``{validation_error}`` in the command)."""

    def __init__(self, command: str, names: str | list[str]) -> None:
        self.command = command
        self.names = names if isinstance(names, list) else [names]
        self.dic: dict[str, Any] = {}

    def process_scalar(self, name: str, value: float | int) -> None:
        if name in self.names:
            self.dic[name] = value

    def _trigger_step(self) -> None:
        self._trigger()

    def _trigger(self) -> None:
        try:
            values = {k: self.dic[k] for k in self.names}
        except KeyError:
            return
        cmd = self.command.format(**values)
        ret = os.system(cmd)  # noqa: S605 - the user's command, as tensorpack ran it
        if ret != 0:
            logger.error(f"Command {cmd} failed with ret={ret}!")
        self.dic = {}


class CometMLMonitor(MonitorBase):
    """Sends the scalars and images to https://www.comet.ml through a ``comet_ml.Experiment``, as tensorpack's:
    ``log_metric(name, value, step=global_step)``, each image as ``<name>_step<step>[_<i>]`` (JPEG, 0..255),
    ``log_epoch_end`` after each epoch and ``end()`` after training; the experiment's automatic output logging
    off by default (it freezes the progress bar). TensorFlow 2 has no default graph: ``set_model_graph`` gets
    the model's variables, one ``name shape dtype`` line each.
    """

    def __init__(self, experiment: Any = None, tags: list[str] | None = None, **kwargs: Any) -> None:
        """
        Args:
            experiment: a ``comet_ml.Experiment``; then ``tags`` and ``kwargs`` must be empty.
            tags: the experiment's tags.
            kwargs: the arguments of ``comet_ml.Experiment`` (project name, API key, ...).
        """
        if experiment is not None:
            if tags is not None or kwargs:
                raise ValueError("CometMLMonitor(experiment=...) takes no tags or Experiment arguments: "
                                 "set them on the experiment")
            self._exp = experiment
        else:
            comet_ml = require("comet_ml", "CometMLMonitor", "comet_ml")
            kwargs.setdefault("log_code", True)
            kwargs.setdefault("auto_output_logging", None)
            self._exp = comet_ml.Experiment(**kwargs)
            if tags is not None:
                self._exp.add_tags(tags)
        self._exp.set_code("Code logging is impossible ...")
        self._exp.log_dependency("trainstack-tensorpack", __version__)

    @property
    def experiment(self) -> Any:
        """The ``comet_ml.Experiment``."""
        return self._exp

    def _before_train(self) -> None:
        lines = [f"{name} {tuple(v.shape)} {v.dtype.name}" for name, v in model_variables(self.trainer).items()]
        self._exp.set_model_graph("\n".join(lines))

    def process_scalar(self, name: str, value: float | int) -> None:
        self._exp.log_metric(name, value, step=self.global_step)

    def process_image(self, name: str, value: Any) -> None:
        self._exp.set_step(self.global_step)
        for idx, v in enumerate(value):
            suffix = "_" + str(idx) if len(value) > 1 else ""
            self._exp.log_image(v, image_format="jpeg", name=f"{name}_step{self.global_step}{suffix}",
                                image_minmax=(0, 255))

    def _after_train(self) -> None:
        self._exp.end()

    def _after_epoch(self) -> None:
        self._exp.log_epoch_end(self.epoch_num)


__getattr__ = unprovided(__name__)
