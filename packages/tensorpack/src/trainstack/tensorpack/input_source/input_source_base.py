"""tensorpack 0.11's ``tensorpack.input_source.input_source_base``: ``InputSource`` with tensorpack's
``get_input_tensors()`` (stand-ins for ``remap_input_source``, listed in ``_replaced``).

The core's sources take the tower explicitly, ``get_input_tensors(k)``. tensorpack's took no
argument: each call inside one graph build was the next tower (its multi-GPU GAN trainer's
``call_for_each_tower(..., lambda: tower_func(*input.get_input_tensors()))``). That counter
lives here, in this layer's :class:`InputSource`, and nowhere in the core: this layer's sources
(``input_source.py``) are the core's with it as their first base, so that they are instances of
tensorpack's ``InputSource`` and ``FeedfreeInput`` too, as in tensorpack.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

import tensorflow as tf

from trainstack import inputs
from trainstack.tensorpack.tf1 import producing_for

from .._replaced import stand_in_names, unprovided

__all__ = ["InputSource"] + stand_in_names(__name__)


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


__getattr__ = unprovided(__name__)
