"""tensorpack 0.11's ``tensorpack.utils.viz``: its names from ``trainstack.dataflow.viz``."""
from trainstack.dataflow.viz import draw_boxes, gen_stack_patches, interactive_imshow, stack_patches

from .._replaced import unprovided

__all__ = ["interactive_imshow", "stack_patches", "gen_stack_patches", "draw_boxes"]

__getattr__ = unprovided(__name__)
