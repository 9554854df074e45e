"""Dataflows: re-iterable Python objects yielding one datapoint per step.

The helpers live in ``trainstack.dataflow`` (with tensorpack's DataFlow
building blocks); this module keeps their old import path.
"""
from trainstack.dataflow.protocol import (dataflow_len_or_none, dataflow_size, numbered_passes, repeat_passes,
                                         reset_dataflow)

__all__ = ["dataflow_size", "dataflow_len_or_none", "reset_dataflow", "repeat_passes", "numbered_passes"]
