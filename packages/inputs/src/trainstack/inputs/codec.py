"""msgpack frames between processes: moved to ``trainstack.dataflow.codec``; this module keeps
the old import path."""
from trainstack.dataflow.codec import FRAME_FIELDS, decode_frame, dumps, encode_frame, loads

__all__ = ["dumps", "loads", "encode_frame", "decode_frame", "FRAME_FIELDS"]
