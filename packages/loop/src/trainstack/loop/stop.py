"""StopTraining, the exception that ends training cleanly; NonFiniteError, the one a run stopped
by NaN or infinite values ends with."""
from __future__ import annotations

__all__ = ["StopTraining", "NonFiniteError", "ON_NONFINITE"]

#: what ``Trainer.main_loop(on_nonfinite=...)`` does after a stop for non-finite values
ON_NONFINITE = ("raise", "stop")


class StopTraining(BaseException):
    """Raise from a step or any callback hook to end training cleanly.

    The trainer catches it: every callback's ``after_train`` runs and
    ``train()`` returns normally. Like ``KeyboardInterrupt`` it derives from
    ``BaseException``, so that an ``except Exception`` in user code does not
    swallow it by accident.
    """


class NonFiniteError(RuntimeError):
    """Training stopped because a value went NaN or infinite (the weights, a loss).

    A callback that finds such a value (the savers, which refuse to save NaN weights;
    ``TerminateOnNaN``) stops training with :meth:`Trainer.stop_on_nonfinite`; once every
    callback's ``after_train`` has run (the last good checkpoint kept, the statistics
    flushed), :meth:`Trainer.main_loop` raises this error, so that ``python train.py`` exits
    with a non-zero status instead of 0. ``main_loop(on_nonfinite="stop")`` (``train``,
    ``train_with_defaults``, ``TrainConfig(on_nonfinite="stop")``) ends such a run quietly,
    as a StopTraining would.

    ``step``: the first global step whose loss or gradients were not finite, when the trainer
    records it (the towers' trainers do, see their ``first_nonfinite``), else None;
    ``tensor``: what was not finite there (``"the loss 'cost'"``, ``"the gradient of
    'dense/kernel'"``), or None; ``stopped_at``: the global step after which training stopped.
    """

    def __init__(self, message: str, step: int | None = None, tensor: str | None = None,
                 stopped_at: int | None = None) -> None:
        super().__init__(message)
        self.step = step
        self.tensor = tensor
        self.stopped_at = stopped_at
