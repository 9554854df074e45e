"""GeneratorSamplesGrid: after each epoch, TensorBoard's event file holds an image whose pixels
are stack_patches of the predictor's outputs for the same inputs (read back with
EventAccumulator), for fixed inputs and for a sampler drawing new ones; and clear errors."""
from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from trainstack.callbacks import TFEventWriter
from trainstack.dataflow.viz import stack_patches
from trainstack.loop import Callback
from trainstack.towers import GeneratorSamplesGrid, ModelDesc, SimpleTrainer, TrainConfig, launch_train_with_config

NOISE, H, W = 3, 6, 5
STEPS = 4


class TinyGenerator(ModelDesc):
    """``z`` -> ``gen/viz`` (N, 6, 5, channels) in [-1, 1], trained toward the images ``real``."""

    def __init__(self, channels: int) -> None:
        self.channels = channels
        self.fc = keras.layers.Dense(H * W * channels)

    def inputs(self) -> list[tf.TensorSpec]:
        return [tf.TensorSpec([None, NOISE], tf.float32, "z"),
                tf.TensorSpec([None, H, W, self.channels], tf.float32, "real")]

    def build_graph(self, z: tf.Tensor, real: tf.Tensor) -> tf.Tensor:
        with tf.name_scope("gen"):
            gen = tf.identity(tf.reshape(tf.tanh(self.fc(z)), [-1, H, W, self.channels]), name="viz")
        return tf.reduce_mean(tf.square(gen - real), name="cost")

    def optimizer(self) -> keras.optimizers.Optimizer:
        return keras.optimizers.SGD(0.5)


def batches(channels: int, n: int = STEPS) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(0)
    return [[rng.normal(size=(8, NOISE)).astype(np.float32),
             rng.uniform(-1, 1, size=(8, H, W, channels)).astype(np.float32)] for _ in range(n)]


def to_pixels(x: np.ndarray) -> np.ndarray:
    return (x + 1) * 127.5


class Expect(Callback):
    """Runs after the grid callback at each trigger: what its image should be, from the
    trainer's own predictor on the inputs ``inputs()`` returns."""

    def __init__(self, inputs, **layout) -> None:
        self.inputs, self.layout, self.grids = inputs, layout, []

    def _trigger(self) -> None:
        (out,) = self.trainer.get_predictor(["z"], ["gen/viz"])(self.inputs())
        self.grids.append((self.global_step, stack_patches(np.clip(to_pixels(out), 0, 255), **self.layout)))


def train(callbacks: list[Callback], channels: int, epochs: int = 2) -> SimpleTrainer:
    trainer = SimpleTrainer()
    launch_train_with_config(TrainConfig(model=TinyGenerator(channels), dataflow=batches(channels),
                                         callbacks=callbacks, monitors=[TFEventWriter()],
                                         steps_per_epoch=STEPS, max_epoch=epochs), trainer)
    return trainer


def images_in_events(logdir: str, tag: str) -> list[tuple[int, np.ndarray]]:
    acc = EventAccumulator(logdir, size_guidance={"images": 0})
    acc.Reload()
    assert tag in acc.Tags()["images"], f"no image {tag!r} in the event file; images: {acc.Tags()['images']}"
    return [(e.step, tf.io.decode_png(e.encoded_image_string).numpy()) for e in acc.Images(tag)]


def assert_grids_equal(got: list, expected: list) -> None:
    assert [s for s, _ in got] == [s for s, _ in expected], (
        f"images at steps {[s for s, _ in got]}, expected one per epoch at {[s for s, _ in expected]}")
    for (step, image), (_, grid) in zip(got, expected):
        assert image.shape == grid.shape, f"step {step}: image of shape {image.shape}, expected {grid.shape}"
        diff = np.argwhere(image != grid)
        first = tuple(int(i) for i in diff[0]) if len(diff) else None
        assert not len(diff), f"step {step}: {len(diff)} pixels differ from stack_patches, first at {first}"


def test_fixed_inputs_color_grid_each_epoch_in_tensorboard(logger_dir):
    z = np.random.default_rng(1).normal(size=(7, NOISE)).astype(np.float32)   # 7 of 9 cells
    layout = dict(nr_row=3, nr_col=3, border=1, bgcolor=(0, 40, 255))
    grid = GeneratorSamplesGrid(["z"], "gen/viz", sampler=z, tag="gen/samples", postprocess=to_pixels, **layout)
    expect = Expect(lambda: z, **layout)
    train([grid, expect], channels=3)

    got = images_in_events(logger_dir, "gen/samples")
    assert_grids_equal(got, expect.grids)
    assert [s for s, _ in got] == [STEPS, 2 * STEPS]
    assert got[0][1].shape == (3 * 6 + 2, 3 * 5 + 2, 3)
    assert (got[0][1][-6:, -5:] == (0, 40, 255)).all(), "the two empty cells should be background"
    assert not np.array_equal(got[0][1], got[1][1]), "training should change the samples between epochs"
    np.testing.assert_array_equal(grid.last_grid, expect.grids[-1][1])


def test_sampler_called_each_trigger_gray_grid_and_before_train(logger_dir):
    drawn: list[np.ndarray] = []
    rng = np.random.default_rng(2)

    def sampler(n: int) -> np.ndarray:
        drawn.append(rng.normal(size=(n, NOISE)).astype(np.float32))
        return drawn[-1]

    grid = GeneratorSamplesGrid("z", "gen/viz", sampler, nr_row=2, nr_col=4, tag="samples",
                                postprocess=lambda x: to_pixels(x)[..., 0], before_train=True)

    class ExpectBeforeTrain(Expect):
        def _before_train(self) -> None:
            self._trigger()

    expect = ExpectBeforeTrain(lambda: drawn[-1], nr_row=2, nr_col=4)   # default border int(0.05 * 5) = 0
    train([grid, expect], channels=1)

    assert len(drawn) == 3 and all(d.shape == (8, NOISE) for d in drawn), "sampler(8) before training and per epoch"
    got = images_in_events(logger_dir, "samples")
    assert_grids_equal(got, expect.grids)      # NHW outputs and NHW1 ones make the same HxWx1 grid
    assert [s for s, _ in got] == [0, STEPS, 2 * STEPS]
    assert got[0][1].shape == (2 * 6, 4 * 5, 1)


class FakeMonitors:
    def __init__(self) -> None:
        self.images: list[tuple[str, np.ndarray]] = []

    def put_image(self, name: str, value: np.ndarray) -> None:
        self.images.append((name, value))


class FakeTrainer:
    """What the callback uses of a trainer: get_predictor and monitors."""

    def __init__(self, outputs: np.ndarray) -> None:
        self.outputs, self.monitors, self.calls = outputs, FakeMonitors(), []

    def get_predictor(self, input_names, output_names, device=0):
        def predictor(*arrays):
            self.calls.append(arrays)
            return [self.outputs]
        return predictor


def test_outputs_out_of_range_are_clipped_and_uint8_passes_unchanged():
    outputs = np.array([[[-20.0, 300.0], [12.7, 255.0]]])       # one 2x2 gray image
    cb = GeneratorSamplesGrid("z", "g", np.zeros((1, 2)), nr_row=1, nr_col=1)
    cb.setup_graph(FakeTrainer(outputs))
    cb.trigger()
    name, image = cb.trainer.monitors.images[0]
    assert name == "generated_samples"
    np.testing.assert_array_equal(image[..., 0], [[0, 255], [12, 255]])   # clipped, then stack_patches' cast


@pytest.mark.parametrize("outputs, message", [
    (np.zeros((2, 4)), r"'g' has shape \(2, 4\); expected images, NHW or NHWC"),
    (np.zeros((2, 4, 4, 2)), r"expected images, NHW or NHWC with 1 or 3 channels"),
    (np.array([[["a"]]]), "expected real numbers"),
])
def test_outputs_that_are_not_images_are_refused(outputs, message):
    cb = GeneratorSamplesGrid("z", "g", np.zeros((2, 2)), nr_row=1, nr_col=2)
    cb.setup_graph(FakeTrainer(outputs))
    with pytest.raises(ValueError, match=message):
        cb.trigger()


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match=r"hold 5 samples; a 2x2 grid shows 1 to 4"):
        GeneratorSamplesGrid("z", "g", np.zeros((5, 3)), nr_row=2, nr_col=2)
    with pytest.raises(ValueError, match=r"a list of 2 arrays, one per input \['z', 'label'\]"):
        GeneratorSamplesGrid(["z", "label"], "g", np.zeros((2, 3)), nr_row=2, nr_col=2)
    with pytest.raises(ValueError, match=r"same number of samples, got first dimensions \{'z': 2, 'label': 3\}"):
        GeneratorSamplesGrid(["z", "label"], "g", [np.zeros((2, 3)), np.zeros(3)], nr_row=2, nr_col=2)
    with pytest.raises(TypeError, match="input_names"):
        GeneratorSamplesGrid([], "g", np.zeros((1, 3)))
    with pytest.raises(ValueError, match="nr_row"):
        GeneratorSamplesGrid("z", "g", np.zeros((1, 3)), nr_row=0)
    cb = GeneratorSamplesGrid("z", "g", lambda n: np.zeros((n + 1, 3)), nr_row=1, nr_col=2)
    cb.setup_graph(FakeTrainer(np.zeros((3, 4, 4))))
    with pytest.raises(ValueError, match=r"what sampler\(2\) returned hold 3 samples"):
        cb.trigger()
    bare = GeneratorSamplesGrid("z", "g", np.zeros((1, 3)))
    with pytest.raises(TypeError, match="does not have"):
        bare.setup_graph(object())
