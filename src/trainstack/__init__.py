"""trainstack: tensorpack's training system on TensorFlow 2, in one namespace.

``trainstack.<Name>`` is the public name ``<Name>`` of a layer:
``trainstack.loop`` (Trainer, Callback, StopTraining, ...),
``trainstack.dataflow`` (DataFromList, BatchData, MapData, MultiProcessMapData, ...),
``trainstack.callbacks`` (ModelSaver, ProgressBar, TFEventWriter, ...),
``trainstack.inputs`` (FeedInput, QueueInput, TFDatasetInput, ...) and
``trainstack.towers`` (ModelDesc, SimpleTrainer, TrainConfig, ...) and
``trainstack.distributed`` (HorovodTrainer, DistributedTrainerReplicated, ...). Names are
imported on first use, so that ``import trainstack.loop`` and ``import
trainstack.dataflow`` stay free of TensorFlow even with this meta-package installed.
"""
# First statement: without it this regular package would hide the layers'
# namespace portions (trainstack.loop, ...) installed as separate distributions.
__path__ = __import__("pkgutil").extend_path(__path__, __name__)

import importlib as _importlib  # noqa: E402

# the layers whose public names are re-exported, bottom first
_LAYERS = ("trainstack.loop", "trainstack.dataflow", "trainstack.callbacks", "trainstack.inputs",
           "trainstack.towers", "trainstack.distributed")


def __getattr__(name: str):
    if name == "__all__":
        names = list(dict.fromkeys(
            n for layer in _LAYERS for n in _importlib.import_module(layer).__all__))
        globals()["__all__"] = names
        return names
    for layer in _LAYERS:
        module = _importlib.import_module(layer)
        if name in module.__all__:
            value = globals()[name] = getattr(module, name)
            return value
    raise AttributeError(f"module 'trainstack' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__getattr__("__all__")})
