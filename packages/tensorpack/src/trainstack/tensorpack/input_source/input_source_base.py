"""tensorpack 0.11's ``tensorpack.input_source.input_source_base``: ``InputSource`` with tensorpack's
``get_input_tensors()`` and ``remap_input_source``.

The core's sources take the tower explicitly, ``get_input_tensors(k)``. tensorpack's took no
argument: each call inside one graph build was the next tower (its multi-GPU GAN trainer's
``call_for_each_tower(..., lambda: tower_func(*input.get_input_tensors()))``). That counter
lives here, in this layer's :class:`InputSource`, and nowhere in the core: this layer's sources
(``input_source.py``) are the core's with it as their first base, so that they are instances of
tensorpack's ``InputSource`` and ``FeedfreeInput`` too, as in tensorpack.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence

import tensorflow as tf

from trainstack import inputs
from trainstack.loop import Callback
from trainstack.tensorpack.tf1 import producing_for

from .._replaced import stand_in_names, unprovided

__all__ = ["InputSource", "remap_input_source"] + stand_in_names(__name__)


class InputSource(inputs.InputSource):
    """tensorpack's ``InputSource``: :class:`trainstack.inputs.InputSource` whose ``get_input_tensors()``
    without an index is the next tower's batch inside the trace in progress (``tracing()`` restarts
    the count at tower 0), as tensorpack's; outside a trace it is tower 0's. With an index it is the
    core's."""

    def get_input_tensors(self, tower_index: int | None = None) -> list[tf.Tensor]:
        if tower_index is None:
            count = self.__dict__.get("_next_tower")
            tower_index = 0 if count is None else count
            if count is not None:
                if count >= self.num_towers:
                    raise inputs.InputError(
                        f"{self.name} was set up for {self.num_towers} tower(s) but get_input_tensors() was "
                        f"called {count + 1} times in one trace; pass num_towers= to setup()")
                self.__dict__["_next_tower"] = count + 1
        with producing_for(self, tower_index):   # TF1's range_input_producer keeps its counter per source
            return super().get_input_tensors(tower_index)

    @contextlib.contextmanager
    def tracing(self, feeds: Mapping[str, tf.Tensor] | None = None) -> Iterator[None]:
        outer = self.__dict__.get("_next_tower")
        self.__dict__["_next_tower"] = 0
        try:
            with super().tracing(feeds):
                yield
        finally:
            self.__dict__["_next_tower"] = outer


class RemapInputSource(InputSource):
    """``input``'s tensors as the model's inputs named ``names``; the model's other inputs are feeds of the step
    (``tower<k>/<name>``), which a callback's ``before_run`` must give, as tensorpack's placeholders had to be
    fed (the step names them when they are not). Everything else (size, callbacks, prefetching, resuming) is
    ``input``'s."""

    def __init__(self, input: inputs.InputSource, names: Sequence[str]) -> None:
        super().__init__()
        if not isinstance(input, inputs.InputSource):
            raise TypeError(f"remap_input_source(input=...) must be an InputSource, got {input!r}")
        if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
            raise TypeError(f"remap_input_source(names=...) must be a list of input names, got {names!r}")
        self._input = input
        self._names = tuple(names)
        self.reads_in_tower_order = input.reads_in_tower_order
        self._others: tuple[tf.TensorSpec, ...] = ()

    @property
    def name(self) -> str:
        return f"Remap({self._input.name}, {list(self._names)})"

    def _setup(self, signature: tuple[tf.TensorSpec, ...]) -> None:
        by_name = {spec.name: spec for spec in signature}
        missing = [n for n in self._names if n not in by_name]
        if missing:
            raise inputs.InputError(f"{self.name}: the model has no inputs {missing}; its inputs are "
                                    f"{list(by_name)}")
        self._input.setup([by_name[n] for n in self._names], num_towers=self.num_towers)
        self._others = tuple(spec for spec in signature if spec.name not in self._names)

    @contextlib.contextmanager
    def tracing(self, feeds: Mapping[str, tf.Tensor] | None = None) -> Iterator[None]:
        feeds = feeds or {}
        own = self._input.feed_signature()
        with super().tracing(feeds), self._input.tracing({k: v for k, v in feeds.items() if k in own}):
            yield

    def _get_input_tensors(self, tower_index: int) -> list[tf.Tensor]:
        mapped = dict(zip(self._names, self._input.get_input_tensors(tower_index), strict=True))
        feeds = self._traced_feeds() if self._others else {}
        return [mapped[spec.name] if spec.name in mapped else feeds[_feed_name(spec.name, tower_index)]
                for spec in self.input_signature]

    def _feed_signature(self) -> Mapping[str, tf.TensorSpec]:
        own = {_feed_name(spec.name, k): spec for k in range(self.num_towers) for spec in self._others}
        return {**self._input.feed_signature(), **own}

    def _get_callbacks(self) -> list[Callback]:
        return self._input.get_callbacks()

    def _prefetcher(self) -> Callable[[], None] | None:
        return self._input.prefetcher()

    def _size(self) -> int:
        return self._input.size()

    def resume_at_step(self, global_step: int) -> bool:
        """``input``'s own callback resumes it; nothing else to skip."""
        return True


def _feed_name(spec_name: str, tower_index: int) -> str:
    """The feed of input ``spec_name`` for tower ``tower_index``: ``tower<k>/<name>``, as the core's feeds."""
    return f"tower{tower_index}/{spec_name}"


def remap_input_source(input: inputs.InputSource, names: Sequence[str]) -> InputSource:
    """``input`` (an InputSource whose tensors are the model's inputs ``names``, in that order) as the source of
    a model with other or more inputs, as tensorpack's: e.g. ``remap_input_source(QueueInput(ds), ['image',
    'label'])`` for a model whose inputs are ``score, label, image``."""
    return RemapInputSource(input, names)


__getattr__ = unprovided(__name__)
