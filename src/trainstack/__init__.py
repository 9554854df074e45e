"""trainstack: tensorpack's training system on TensorFlow 2, in one namespace.

Re-exports the public names of the layers: ``trainstack.loop`` (Trainer,
Callback, StopTraining, ...) and ``trainstack.callbacks`` (ModelSaver,
ProgressBar, TFEventWriter, ...). The inputs, towers and distributed layers
are placeholders that export nothing yet.
"""
# First statement: without it this regular package would hide the layers'
# namespace portions (trainstack.loop, ...) installed as separate distributions.
__path__ = __import__("pkgutil").extend_path(__path__, __name__)

from trainstack import callbacks as _callbacks  # noqa: E402
from trainstack import loop as _loop  # noqa: E402
from trainstack.callbacks import *  # noqa: E402,F401,F403
from trainstack.loop import *  # noqa: E402,F401,F403

__all__ = list(dict.fromkeys([*_loop.__all__, *_callbacks.__all__]))
