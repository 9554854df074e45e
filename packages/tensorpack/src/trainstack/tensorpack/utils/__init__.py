"""tensorpack 0.11's ``tensorpack.utils``: its names from its module ``utils``."""

from .._replaced import unprovided
from . import logger
from .utils import change_env, execute_only_once, fix_rng_seed, get_rng, get_tqdm, humanize_time_delta

__all__ = ["change_env", "get_rng", "fix_rng_seed", "get_tqdm", "execute_only_once", "humanize_time_delta", "logger"]

__getattr__ = unprovided(__name__)
