"""main_loop's SIGTERM/SIGINT handlers: installed for the time of the loop and put back after by
default; with handle_signals=False the process's own handlers stay, untouched, during training."""
from __future__ import annotations

import os
import signal
import threading

import pytest

from trainstack.loop import Callback, Trainer

SIGNALS = (signal.SIGTERM, signal.SIGINT)

pytestmark = pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                                reason="signal handlers are installed from the main thread only")


class SeeHandlers(Callback):
    """Records the process's SIGTERM/SIGINT handlers in before_train and after each step."""

    def __init__(self) -> None:
        self.seen: list[dict[int, object]] = []

    def _look(self) -> None:
        self.seen.append({sig: signal.getsignal(sig) for sig in SIGNALS})

    _before_train = _look
    _trigger_step = _look


@pytest.fixture
def own_handlers():
    """Handlers of "the host program" for both signals (recording what they receive), restored after."""
    received: list[int] = []

    def handler(signum, frame):
        received.append(signum)

    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    yield handler, received
    for sig, h in previous.items():
        signal.signal(sig, h)


def trainer() -> Trainer:
    t = Trainer()
    t.train_op = lambda: None
    return t


def test_by_default_the_loop_installs_its_handlers_and_puts_the_previous_ones_back(own_handlers):
    handler, received = own_handlers
    seen = SeeHandlers()
    trainer().train([seen], [], steps_per_epoch=2, max_epoch=2)
    assert len(seen.seen) == 5
    for during in seen.seen:
        for sig in SIGNALS:
            assert during[sig] is not handler and callable(during[sig])
    assert all(signal.getsignal(sig) is handler for sig in SIGNALS)  # restored after training
    assert received == []


@pytest.mark.parametrize("how", ["train", "train_with_defaults", "main_loop"])
def test_handle_signals_false_leaves_the_process_handlers_alone(own_handlers, how):
    handler, received = own_handlers
    seen = SeeHandlers()

    class SendSigterm(Callback):
        def _trigger_step(self):
            if self.global_step == 1:
                os.kill(os.getpid(), signal.SIGTERM)  # the host's handler gets it, not the loop

    t = trainer()
    callbacks = [seen, SendSigterm()]
    if how == "train":
        t.train(callbacks, [], steps_per_epoch=2, max_epoch=2, handle_signals=False)
    elif how == "train_with_defaults":
        t.train_with_defaults(callbacks=callbacks, steps_per_epoch=2, max_epoch=2, handle_signals=False)
    else:
        t.setup_callbacks(callbacks, [])
        t.initialize()
        t.main_loop(2, max_epoch=2, handle_signals=False)
    assert len(seen.seen) == 5
    assert all(during[sig] is handler for during in seen.seen for sig in SIGNALS)
    assert all(signal.getsignal(sig) is handler for sig in SIGNALS)
    # the signal went to the host's handler; the loop neither noticed nor stopped
    assert received == [signal.SIGTERM]
    assert t.global_step == 4 and t.loop.interrupted is None


def test_handle_signals_must_be_a_bool():
    t = trainer()
    with pytest.raises(TypeError, match=r"main_loop\(handle_signals=...\) must be True or False, got 0"):
        t.train([], [], steps_per_epoch=1, max_epoch=1, handle_signals=0)


def _sleep_then_exit(started) -> None:  # the forked child: a fork-based DataFlow worker's stand-in
    import time
    started.set()
    time.sleep(30)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_process_forked_during_training_ends_on_sigterm_as_before_training():
    """tensorpack's workers fork when training starts (QueueInput resets the dataflow then): they
    inherit the loop's handler, but terminate() must still end them, not log and carry on."""
    import multiprocessing

    exit_codes = []

    class ForkAndTerminate(Callback):
        def _before_train(self) -> None:
            context = multiprocessing.get_context("fork")
            started = context.Event()
            child = context.Process(target=_sleep_then_exit, args=(started,), daemon=True)
            child.start()
            # a signal that lands while the child is still inside fork() is dropped by Python's
            # after-fork clean-up, whatever the handler: terminate once the child runs its target
            assert started.wait(10)
            child.terminate()  # SIGTERM
            child.join(10)
            exit_codes.append(child.exitcode)
            if child.is_alive():
                child.kill()
                child.join()

    t = trainer()
    t.train([ForkAndTerminate()], [], steps_per_epoch=1, max_epoch=1)
    assert exit_codes == [-signal.SIGTERM]  # without the pid check: None (still sleeping after 10 s)
    assert t.loop.interrupted is None  # the child's signal did not stop the trainer
