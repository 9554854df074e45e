"""tensorpack 0.11's ``tensorpack.callbacks.misc`` (``EstimatedTimeLeft``: ``trainstack.callbacks``'; ``SendStat``
and ``InjectShell`` are tensorpack's)."""
from __future__ import annotations

import os

from trainstack.callbacks import EstimatedTimeLeft, logger
from trainstack.loop import Callback

from .._replaced import unprovided

__all__ = ["SendStat", "InjectShell", "EstimatedTimeLeft"]


class SendStat(Callback):
    """After each epoch, runs the shell command ``command.format(**stats)``, ``stats`` the latest values of
    the scalars ``names`` (``{validation_error}`` in the command); a failing command is logged as an error."""

    def __init__(self, command: str, names: str | list[str]) -> None:
        self.command = command
        self.names = names if isinstance(names, list) else [names]

    def _trigger(self) -> None:
        monitors = self.trainer.monitors
        assert monitors is not None  # set by the trainer before training
        values = {k: monitors.get_latest(k) for k in self.names}
        cmd = self.command.format(**values)
        ret = os.system(cmd)  # noqa: S605 - the user's command, as tensorpack ran it
        if ret != 0:
            logger.error(f"Command {cmd} failed with ret={ret}!")


class InjectShell(Callback):
    """After each epoch, if ``file`` exists, opens an IPython or pdb shell (``shell``) in this callback,
    where ``self.trainer`` is the trainer; the file is removed after training."""

    def __init__(self, file: str = "INJECT_SHELL.tmp", shell: str = "ipython") -> None:
        if shell not in ("ipython", "pdb"):
            raise ValueError(f"InjectShell(shell={shell!r}): 'ipython' or 'pdb'")
        self._file = file
        self._shell = shell
        logger.info(f"Create a file '{file}' to open {shell} shell.")

    def _trigger(self) -> None:
        if os.path.isfile(self._file):
            logger.info(f"File {self._file} exists, entering shell.")
            self._inject()

    def _inject(self) -> None:
        trainer = self.trainer  # noqa: F841 - in the shell's scope
        if self._shell == "ipython":
            import IPython  # noqa: PLC0415 - only when asked for

            IPython.embed()
        else:
            import pdb  # noqa: PLC0415

            pdb.set_trace()  # noqa: T100 - the point of this callback

    def _after_train(self) -> None:
        if os.path.isfile(self._file):
            os.unlink(self._file)


__getattr__ = unprovided(__name__)
