"""Train logistic regression in NumPy through trainstack's loop.

"Anything that runs in a loop": the step is plain Python (one SGD step on a
minibatch), and trainstack supplies the epochs, the default callbacks
(progress bar, ...) and the default monitors (TensorBoard events,
``stats.jsonl``, console). The data are two Gaussian classes generated with a
fixed seed; validation accuracy is reported after each epoch.

    python examples/logistic_regression.py [--epochs 10] [--logdir train_log/logistic_regression]

Until the towers layer lands this is the project's main job.
"""
from __future__ import annotations

import argparse
import logging

import trainstack.callbacks  # noqa: F401 - first: imports TensorFlow without its start-up lines

# isort: split

import numpy as np

from trainstack.callbacks import (
    DEFAULT_CALLBACKS,
    DEFAULT_MONITORS,
    ObjAttrParam,
    ProgressBar,
    ScheduledHyperParamSetter,
    SimpleMovingAverage,
    ThroughputTracker,
    set_logger_dir,
)
from trainstack.loop import Callback, Trainer

logger = logging.getLogger("trainstack.examples")


def make_data(n: int, features: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two overlapping Gaussian classes; the Bayes accuracy is about 92%."""
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=features)
    direction /= np.linalg.norm(direction)
    y = rng.integers(0, 2, size=n)
    x = rng.normal(size=(n, features)) + np.outer(2 * y - 1, direction * 1.4)
    return x.astype(np.float32), y.astype(np.float32)


class LogisticRegression:
    """The model and its SGD step; the step pulls its own minibatches."""

    def __init__(self, x: np.ndarray, y: np.ndarray, batch_size: int, learning_rate: float, seed: int):
        self.x, self.y, self.batch_size, self.learning_rate = x, y, batch_size, learning_rate
        self.w = np.zeros(x.shape[1], dtype=np.float32)
        self.b = np.float32(0.0)
        self._rng = np.random.default_rng(seed)
        self._batches = self._iterate()

    @property
    def steps_per_epoch(self) -> int:
        return len(self.x) // self.batch_size

    def _iterate(self):
        while True:  # reshuffled every pass
            order = self._rng.permutation(len(self.x))
            for i in range(self.steps_per_epoch):
                yield order[i * self.batch_size:(i + 1) * self.batch_size]

    def predict(self, x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(x @ self.w + self.b)))

    def step(self) -> dict[str, float]:
        """One SGD step on the next minibatch; returns its loss and accuracy."""
        idx = next(self._batches)
        x, y = self.x[idx], self.y[idx]
        p = self.predict(x)
        eps = 1e-7
        loss = float(-np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)))
        grad = p - y
        self.w -= self.learning_rate * (x.T @ grad) / len(y)
        self.b -= self.learning_rate * grad.mean()
        return {"loss": loss, "accuracy": float(np.mean((p > 0.5) == y))}


class Validation(Callback):
    """Puts the accuracy on held-out data to the monitors after each epoch."""

    _chief_only = False

    def __init__(self, model: LogisticRegression, x: np.ndarray, y: np.ndarray):
        self.model, self.x, self.y = model, x, y

    def _trigger(self):
        accuracy = float(np.mean((self.model.predict(self.x) > 0.5) == self.y))
        self.trainer.monitors.put_scalar("val_accuracy", accuracy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.02)
    parser.add_argument("--logdir", default="train_log/logistic_regression")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    logging.basicConfig(level=logging.INFO, format="[%(asctime)s %(name)s] %(message)s", datefmt="%H:%M:%S")
    set_logger_dir(args.logdir, action="backup")  # an old run there is renamed, not lost
    x, y = make_data(10000, features=50, seed=args.seed)
    n_train = 8000
    model = LogisticRegression(x[:n_train], y[:n_train], args.batch_size, args.learning_rate, args.seed)

    trainer = Trainer()
    trainer.train_op = model.step
    trainer.train_with_defaults(
        callbacks=[
            SimpleMovingAverage(["loss", "accuracy"], window_size=model.steps_per_epoch),
            Validation(model, x[n_train:], y[n_train:]),
            ThroughputTracker(samples_per_step=args.batch_size),
            # the learning rate is a plain attribute: any object's attribute can be scheduled
            ScheduledHyperParamSetter(ObjAttrParam(model, "learning_rate"),
                                      [(0, args.learning_rate), (6, args.learning_rate / 3),
                                       (8, args.learning_rate / 10)]),
        ],
        # the seeds' defaults, with the progress bar showing the loss
        extra_callbacks=[cb for cb in DEFAULT_CALLBACKS() if not isinstance(cb, ProgressBar)]
        + [ProgressBar(["loss"])],
        monitors=DEFAULT_MONITORS(),
        steps_per_epoch=model.steps_per_epoch,
        max_epoch=args.epochs,
    )
    history = trainer.monitors.get_history("loss/SMA")
    logger.info("loss by epoch: %s", " ".join(f"{v:.4f}" for v in history))
    logger.info("final validation accuracy: %.4f", trainer.monitors.get_latest("val_accuracy"))


if __name__ == "__main__":
    main()
