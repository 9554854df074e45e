"""The model's random state, for checkpoints: what makes a resumed run draw the same numbers.

Keras layers that draw random numbers (Dropout, GaussianNoise, RandomFlip, ...) each
own a ``keras.random.SeedGenerator``, whose state advances at every call. Keras's
checkpoint tracking does not reach it, so a run resumed from a checkpoint would draw
fresh dropout masks. :func:`rng_checkpoint` gathers those states, and those of
``SeedGenerator`` attributes of the model, into one ``tf.Module`` that the trainers put
in their checkpoints under ``rng``.

Not covered (document, do not guess): TensorFlow's stateful random ops without a
generator (``tf.random.uniform`` in ``build_graph``) and NumPy / Python randomness
outside the model. Use Keras layers or ``keras.random.*(seed=self.seed_generator)``.
"""
from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from trainstack.callbacks import tf_private

__all__ = ["seed_generators", "rng_checkpoint"]


def seed_generators(owner: Any) -> list[keras.random.SeedGenerator]:
    """The SeedGenerators of ``owner`` (a ModelDesc, a layer or a module), in attribute order:
    its ``SeedGenerator`` attributes and those of its Keras layers and their sub-layers."""
    found: dict[int, keras.random.SeedGenerator] = {}

    def visit(value: Any) -> None:
        if isinstance(value, keras.random.SeedGenerator):
            found.setdefault(id(value), value)
        elif isinstance(value, keras.layers.Layer):
            # private Keras API: the layer tree and each layer's generators (no public view yet)
            for generator in tf_private.layer_seed_generators(value):
                found.setdefault(id(generator), generator)
        elif isinstance(value, (list, tuple)):
            for v in value:
                visit(v)
        elif isinstance(value, dict):
            for v in value.values():
                visit(v)

    if owner is not None:
        visit(owner if isinstance(owner, (keras.layers.Layer, tf.Module)) else list(vars(owner).values()))
    return list(found.values())


def rng_checkpoint(owner: Any) -> tf.Module | None:
    """A ``tf.Module`` holding the state variables of ``owner``'s SeedGenerators (``states``,
    a list in :func:`seed_generators` order), or None when the model draws no random numbers."""
    generators = seed_generators(owner)
    if not generators:
        return None
    module = tf.Module(name="rng")
    module.states = [g.state.value for g in generators]
    return module
