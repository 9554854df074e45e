"""tensorpack 0.11's ``tensorpack.callbacks.concurrency``: ``StartProcOrThread``."""
from __future__ import annotations

import multiprocessing as mp
from typing import Any

from trainstack.callbacks import logger
from trainstack.loop import Callback

from .._replaced import unprovided
from ..utils.concurrency import StoppableThread, start_proc_mask_signal

__all__ = ["StartProcOrThread"]


class StartProcOrThread(Callback):
    """Starts processes or threads before training (SIGINT masked, so Ctrl-C reaches the trainer only);
    after training, with ``stop_at_last``, terminates the processes and stops the ``StoppableThread``s
    (other threads are left alone, as in tensorpack)."""

    _chief_only = False

    def __init__(self, startable: Any, stop_at_last: bool = True) -> None:
        self._procs_threads = startable if isinstance(startable, list) else [startable]
        self._stop_at_last = stop_at_last

    def _before_train(self) -> None:
        logger.info("Starting " + ", ".join(k.name for k in self._procs_threads) + " ...")
        start_proc_mask_signal(self._procs_threads)

    def _after_train(self) -> None:
        if not self._stop_at_last:
            return
        for k in self._procs_threads:
            if not k.is_alive():
                continue
            if isinstance(k, mp.Process):
                logger.info(f"Stopping {k.name} ...")
                k.terminate()
                k.join(5.0)
                if k.is_alive():
                    logger.error(f"Cannot join process {k.name}.")
            elif isinstance(k, StoppableThread):
                logger.info(f"Stopping {k.name} ...")
                k.stop()
                k.join(5.0)
                if k.is_alive():
                    logger.error(f"Cannot join thread {k.name}.")


__getattr__ = unprovided(__name__)
