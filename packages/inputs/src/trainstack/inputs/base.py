"""InputSource: where a trainer's input tensors come from (tensorpack's InputSource, in TF2).

The trainer (the towers layer, or :class:`~trainstack.inputs.InputReader`)
uses an InputSource in this order::

    source.setup(input_signature, num_towers=K)      # once, before tracing the step
    for cb in source.get_callbacks(): register it     # never chief-only: every process needs its input
    feed_spec = source.feed_signature()               # {name: TensorSpec} the traced step takes
    @tf.function(input_signature=[feed_spec])
    def step(feeds):
        with source.tracing(feeds):                   # binds the traced feed tensors
            for k in range(K):
                inputs = source.get_input_tensors(k)  # tower k's own batch
                ...
    # before training, a callback of the source's calls source.reset_state()
    # each hooked run: the source's callbacks give the feeds the step takes, and
    # source.prefetcher(), when not None, runs while the step computes

The caller names the tower: ``get_input_tensors(k)`` is tower ``k``'s batch,
``0 <= k < num_towers``. K towers take K batches (total batch = batch x K) and
no batch reaches two towers. Inside one :meth:`tracing`, a source reading one
stream (a queue, an iterator) reads the batches in tower order whatever the
order of the calls, so tower ``k`` of step ``s`` gets batch ``s*K + k``; asking
for a tower again in the same trace gives the same tensors. Outside a
:meth:`tracing`, each call reads afresh. Feedfree sources (queues, tf.data, tensors) produce their
tensors inside the graph and take no feeds; :class:`FeedInput` passes NumPy
batches in through the hooked run's feeds.

Every source streams pass after pass of its data; :meth:`size` is one pass,
the default ``steps_per_epoch``, so by default an epoch is exactly one pass.
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence

import tensorflow as tf

from trainstack.loop import Callback
from trainstack.loop.checks import check_int

from .errors import InputError
from .signature import check_tensors, normalize_signature

logger = logging.getLogger("trainstack.inputs")

__all__ = ["InputSource", "FeedfreeInput", "feed_name"]


class InputSource:
    """Base class of input sources. Subclasses implement the ``_hooks``.

    ``_setup(signature)``: build queues/iterators (``self.num_towers`` is set);
    ``_get_input_tensors(tower_index)``: one tower's tensors, in signature order;
    ``_size()``: datapoints per pass; ``_reset_state()``: before training (start
    threads, workers); ``_get_callbacks()``: callbacks the source needs;
    ``_feed_signature()``: feeds the traced step must take ({} when feedfree);
    ``_prefetcher()``: host work preparing the next step's feeds while a step runs (or None);
    ``_skip(n)``: start the stream after its first ``n`` datapoints (to resume a
    run), or return False when the source cannot; ``_datapoints_per_step()``:
    datapoints of the stream one training step uses (one per tower).

    ``reads_in_tower_order``: True (the default) when ``_get_input_tensors`` reads the next
    element of one stream, so that the batch a tower gets depends on the order of the reads;
    a source whose towers' batches are indexed by the tower (feeds, per-tower buffers or
    constants) sets it False.
    """

    reads_in_tower_order: bool = True

    def __init__(self) -> None:
        self._signature: tuple[tf.TensorSpec, ...] | None = None
        self.num_towers = 1
        self._feeds: Mapping[str, tf.Tensor] | None = None
        #: tower index -> the batch read in the trace in progress (None outside :meth:`tracing`)
        self._batches: dict[int, list[tf.Tensor]] | None = None

    # -- public API: bookkeeping, then the hook ---------------------------------
    def setup(self, input_signature: Sequence[tf.TensorSpec], *, num_towers: int = 1) -> list[Callback]:
        """Prepare to produce inputs of ``input_signature`` for ``num_towers`` towers. Call once.

        Returns :meth:`get_callbacks` (as tensorpack's ``InputSource.setup``), for the trainer
        to register."""
        if self._signature is not None:
            raise InputError(f"{self.name} was already set up; an InputSource serves one trainer")
        num_towers = check_int(f"{type(self).__name__}.setup", "num_towers", num_towers, minimum=1)
        signature = normalize_signature(input_signature)
        self.num_towers = num_towers
        self._setup(signature)
        self._signature = signature
        # tensorpack's contract: setup() returns the callbacks, so that a custom trainer can
        # write self.register_callback(input.setup(signature))
        return self.get_callbacks()

    @property
    def input_signature(self) -> tuple[tf.TensorSpec, ...]:
        """The (named) specs given to :meth:`setup`."""
        if self._signature is None:
            raise InputError(f"{self.name} is not set up yet: call setup(input_signature) first")
        return self._signature

    @property
    def is_setup(self) -> bool:
        return self._signature is not None

    def feed_signature(self) -> dict[str, tf.TensorSpec]:
        """The feeds (name -> spec) the traced step takes as its argument; empty when feedfree."""
        self.input_signature  # noqa: B018 - raises when not set up
        return dict(self._feed_signature())

    @contextlib.contextmanager
    def tracing(self, feeds: Mapping[str, tf.Tensor] | None = None) -> Iterator[None]:
        """Wrap one trace of the step: binds the traced ``feeds``; the towers' batches read inside
        are read once each, in tower order (see the module). Nests: the outer trace's state is
        back on exit."""
        outer = self._feeds, self._batches
        self._feeds, self._batches = (feeds or {}), {}
        try:
            yield
        finally:
            self._feeds, self._batches = outer

    def get_input_tensors(self, tower_index: int) -> list[tf.Tensor]:
        """Tower ``tower_index``'s input tensors, in signature order (``0 <= tower_index <
        num_towers``, the towers given to :meth:`setup`)."""
        signature = self.input_signature
        index = check_int(
            f"{self.name}.get_input_tensors", "tower_index", tower_index, minimum=0, maximum=self.num_towers - 1,
            note=f"the tower whose batch to read; {self.name} was set up for {self.num_towers} tower(s): "
                 "pass num_towers= to setup() for more")
        batches = self._batches
        if batches is None:  # outside a trace: read afresh
            return self._checked_tensors(index, signature)
        # a stream's earlier towers read first, so that tower k gets the k-th batch of the step
        for k in (range(index + 1) if self.reads_in_tower_order else (index,)):
            if k not in batches:
                batches[k] = self._checked_tensors(k, signature)
        return list(batches[index])

    def _checked_tensors(self, index: int, signature: tuple[tf.TensorSpec, ...]) -> list[tf.Tensor]:
        return check_tensors(self._get_input_tensors(index), signature, source=self.name)

    def get_callbacks(self) -> list[Callback]:
        """Callbacks the trainer must register for this source (none are chief-only).

        The same callbacks on every call (made once, after :meth:`setup`)."""
        self.input_signature  # noqa: B018
        cbs = self.__dict__.get("_callbacks_made")
        if cbs is None:
            cbs = [*self._get_callbacks(), _ResetStateCallback(self)]
            for cb in cbs:
                cb.chief_only = False
            self.__dict__["_callbacks_made"] = cbs
        return list(cbs)

    def prefetcher(self) -> Callable[[], None] | None:
        """Host work that prepares the next step's input ahead, for the trainer to run while a step
        computes (after launching the step, before waiting for it); None when there is none.
        Feedfree sources prepare their input in TensorFlow's own threads and have none;
        :class:`FeedInput` reads, checks and converts its next batch."""
        self.input_signature  # noqa: B018 - raises when not set up
        return self._prefetcher()

    def size(self) -> int:
        """Datapoints (batches) in one pass of the data: the default ``steps_per_epoch``."""
        return self._size()

    def reset_state(self) -> None:
        """Start (or restart) producing data; called before training by the source's callback."""
        self._reset_state()

    def resume_at_step(self, global_step: int) -> bool:
        """Continue the data where a run that made ``global_step`` training steps left it: the
        stream starts after the datapoints those steps used. Call before :meth:`reset_state`
        (the source's callback does, when the trainer resumes a run from its loop state).

        Exact for a deterministic stream (a dataflow whose order does not depend on timing, a
        tf.data pipeline with fixed seeds). Returns False, with a warning, when the source
        cannot tell its position: it then starts where a fresh run does."""
        n = global_step * self._datapoints_per_step()
        if n == 0:
            return True
        if not self._skip(n):
            logger.warning("%s cannot resume at its position in the data (after %d datapoints); it "
                           "starts where a fresh run starts, so the resumed run sees other data than "
                           "an uninterrupted one would.", self.name, n)
            return False
        logger.info("%s resumes after the %d datapoints that %d steps used.", self.name, n, global_step)
        return True

    @property
    def name(self) -> str:
        return type(self).__name__

    # -- hooks -------------------------------------------------------------------
    def _setup(self, signature: tuple[tf.TensorSpec, ...]) -> None:
        pass

    def _get_input_tensors(self, tower_index: int) -> Sequence[tf.Tensor]:
        raise NotImplementedError(f"{type(self).__name__} must implement _get_input_tensors()")

    def _feed_signature(self) -> Mapping[str, tf.TensorSpec]:
        return {}

    def _get_callbacks(self) -> list[Callback]:
        return []

    def _prefetcher(self) -> Callable[[], None] | None:
        return None

    def _size(self) -> int:
        raise InputError(f"{self.name} does not know its size; pass steps_per_epoch")

    def _reset_state(self) -> None:
        pass

    def _skip(self, n: int) -> bool:
        return False

    def _datapoints_per_step(self) -> int:
        return self.num_towers

    # -- for subclasses ----------------------------------------------------------------
    def _traced_feeds(self) -> Mapping[str, tf.Tensor]:
        """The feed tensors of the trace in progress (see :meth:`tracing`)."""
        if self._feeds is None:
            raise InputError(
                f"{self.name} takes its batches from the step's feeds: get_input_tensors(k) must be "
                "called inside `with source.tracing(feeds):` while the trainer traces its step")
        return self._feeds


class FeedfreeInput(InputSource):
    """An InputSource whose tensors are produced inside the graph; it takes no feeds."""


class _ResetStateCallback(Callback):
    """Calls ``source.reset_state()`` before training; first, when the trainer resumes a run
    (its loop state was loaded from a checkpoint), ``source.resume_at_step(global_step)``."""

    def __init__(self, source: InputSource) -> None:
        self.source = source

    def _default_name(self) -> str:
        return f"ResetState({self.source.name})"

    def _before_train(self) -> None:
        if self.trainer.loop.resumed:
            self.source.resume_at_step(self.global_step)
        self.source.reset_state()


def feed_name(spec_name: str, tower_index: int) -> str:
    """The feed name of input ``spec_name`` for tower ``tower_index`` (``tower<k>/<name>``)."""
    return f"tower{tower_index}/{spec_name}"

