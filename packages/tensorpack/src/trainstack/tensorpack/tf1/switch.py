"""The room's one switch: the only code that replaces anything in TensorFlow or Keras.

A :class:`Patch` names a function of TensorFlow or Keras (``tf.compat.v1``'s
``get_variable``, ``tf.summary.scalar``, Keras' ``Optimizer.minimize``) and the
TF1 behaviour it has while a tower is traced. :func:`engaged` is entered around
each trace (and around a tensorpack-style trainer's ``__init__``):

- the first entry in the process puts a dispatcher in place of each patched
  function; the dispatcher does the TF1 thing only in a thread that is inside
  :func:`engaged`, and calls TensorFlow's own function in every other thread;
- the last exit, exceptions included, puts the originals back (or deletes what
  did not exist, as Keras 3 optimizers' ``minimize``).

So nothing is replaced at import time, another thread sees TensorFlow's own
behaviour while a tower is traced, and after training, prediction or export
returns ``tf``, ``tf.compat.v1``, ``tf.summary`` and ``keras`` are what they were.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["TF1CallError", "Frame", "Patch", "engaged", "current"]


class TF1CallError(RuntimeError):
    """A tower function called a TF1 API that has no meaning in a trainstack tower."""

    # Exception's own __init__ lets autograph re-raise it with its type when it crosses a trace
    __init__ = Exception.__init__


@dataclasses.dataclass(frozen=True, eq=False)
class Frame:
    """What the thread is doing inside the switch: building ``tower`` (a TowerContext) of
    ``tower_func`` (a TowerFunc), or, with both None, constructing a tensorpack-style trainer.
    One frame per build: ``scratch`` is where concept modules keep what lasts one build (e.g.
    the TF1 variable names already requested in it)."""

    tower: Any = None
    tower_func: Any = None
    scratch: dict = dataclasses.field(default_factory=dict)


#: the thread's frames, innermost last (a trace inside a trainer's construction nests)
_local = threading.local()


def current() -> Frame | None:
    """The thread's innermost frame, or None outside the switch."""
    frames = getattr(_local, "frames", None)
    return frames[-1] if frames else None


_MISSING = object()


@dataclasses.dataclass(frozen=True)
class Patch:
    """``owner.name`` replaced by ``emulate(original, frame, *args, **kwargs)`` in threads inside
    the switch. ``owner`` is a callable returning the module or class (resolved when first
    engaged, so that importing the room imports nothing extra)."""

    owner: Callable[[], Any]
    name: str
    emulate: Callable[..., Any]
    #: for a method: patch only where the attribute is missing (Keras 3 optimizers' minimize)
    only_if_missing: bool = False
    #: an attribute read, not a call: the dispatcher is installed as a property of the class
    #: (Keras 3 layers' ``updates``), and ``emulate(original, frame, obj)`` gives its value
    as_property: bool = False


class _Installed:
    """The dispatchers in place, and the originals they replaced."""

    def __init__(self, patches: Sequence[Patch]) -> None:
        self.saved: list[tuple[Any, str, Any]] = []
        for patch in patches:
            owner = patch.owner()
            original = owner.__dict__.get(patch.name, _MISSING) if isinstance(owner, type) \
                else getattr(owner, patch.name, _MISSING)
            if patch.only_if_missing and hasattr(owner, patch.name):
                continue
            if original is _MISSING and not patch.only_if_missing:
                continue  # not in this TensorFlow version
            self.saved.append((owner, patch.name, original))
            dispatch = _dispatcher(patch, original)
            setattr(owner, patch.name, property(dispatch) if patch.as_property else dispatch)

    def restore(self) -> None:
        for owner, name, original in reversed(self.saved):
            if original is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


def _dispatcher(patch: Patch, original: Any) -> Callable[..., Any]:
    def dispatch(*args: Any, **kwargs: Any) -> Any:
        frame = current()
        if frame is None:  # another thread, outside the switch: TensorFlow's own
            if original is _MISSING:
                raise AttributeError(f"{type(args[0]).__name__!r} object has no attribute {patch.name!r}")
            return original(*args, **kwargs)
        return patch.emulate(original, frame, *args, **kwargs)

    if original is not _MISSING:
        functools.update_wrapper(dispatch, original)
    return dispatch


_lock = threading.Lock()
_entries = 0
_installed: _Installed | None = None


@contextlib.contextmanager
def engaged(patches: Sequence[Patch], frame: Frame) -> Iterator[Frame]:
    """Inside: this thread's TF1 calls do what ``patches`` say, under ``frame``."""
    global _entries, _installed  # noqa: PLW0603 - one set of dispatchers per process
    with _lock:
        if _entries == 0:
            _installed = _Installed(patches)
        _entries += 1
    frames = getattr(_local, "frames", None)
    if frames is None:
        frames = _local.frames = []
    frames.append(frame)
    try:
        yield frame
    finally:
        frames.pop()
        with _lock:
            _entries -= 1
            if _entries == 0 and _installed is not None:
                _installed.restore()
                _installed = None
