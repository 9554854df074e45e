"""StopTraining: the exception that ends training cleanly."""

__all__ = ["StopTraining"]


class StopTraining(BaseException):
    """Raise from a step or any callback hook to end training cleanly.

    The trainer catches it: every callback's ``after_train`` runs and
    ``train()`` returns normally. Like ``KeyboardInterrupt`` it derives from
    ``BaseException``, so that an ``except Exception`` in user code does not
    swallow it by accident.
    """
