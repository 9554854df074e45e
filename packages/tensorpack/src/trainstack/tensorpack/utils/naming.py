"""tensorpack 0.11's ``tensorpack.utils.naming``: two names tensorpack gave graph objects (kept as the
same strings; trainstack's loop counts the steps itself and its moving summaries are recorded on the tower)."""
from .._replaced import unprovided

__all__ = ["GLOBAL_STEP_INCR_OP_NAME", "MOVING_SUMMARY_OPS_KEY"]

GLOBAL_STEP_INCR_OP_NAME = "global_step_incr"
MOVING_SUMMARY_OPS_KEY = "MOVING_SUMMARY_OPS"

__getattr__ = unprovided(__name__)
