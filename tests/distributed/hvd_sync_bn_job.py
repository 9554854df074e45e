"""A HorovodTrainer job for test_horovod_sync_bn.py (one process per rank):

    horovodrun -np 2 -H localhost:2 --gloo python tests/distributed/hvd_sync_bn_job.py --out DIR

Each rank trains ``BatchNorm('bn', x, sync_statistics='horovod')`` (tensorpack's SyncBN across processes) for
:data:`STEPS` steps, with a learning rate of 0 (gamma and beta stay 1 and 0), on its own half of each global
batch of :func:`global_batches` (rank r: rows ``r*HALF .. (r+1)*HALF``). It writes ``DIR/rank<r>.npz``: the
layer's output at each step (``out_<step>``) and its moving averages at the end (``mean_ema``,
``variance_ema``)."""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from trainstack.loop import Callback  # noqa: E402
from trainstack.tensorpack.tf1 import BatchNorm, ModelDesc  # noqa: E402

HALF, STEPS, SHAPE = 4, 2, (2, 2, 3)


def global_batches() -> list[np.ndarray]:
    """The whole batch of each step: rank 0's half centred on 0, rank 1's on 3 with another scale, so that
    each half's statistics differ from the whole batch's."""
    rng = np.random.default_rng(0)
    return [np.concatenate([rng.normal(size=(HALF, *SHAPE)), rng.normal(size=(HALF, *SHAPE)) * 2 + 3]
                           ).astype("float32") for _ in range(STEPS)]


class SyncBNModel(ModelDesc):
    def inputs(self):
        return [tf.TensorSpec([None, *SHAPE], tf.float32, "x")]

    def build_graph(self, x):
        out = tf.identity(BatchNorm("bn", x, sync_statistics="horovod"), name="bn_out")
        return tf.reduce_mean(tf.square(out), name="cost")

    def optimizer(self):
        return keras.optimizers.SGD(0.0)


class Record(Callback):
    """The layer's output at each step and, at the end, the moving averages; written to ``rank<r>.npz``."""

    _chief_only = False

    def __init__(self, out: str, rank: int) -> None:
        self.path, self.saved = os.path.join(out, f"rank{rank}.npz"), {}

    def _before_run(self, ctx):
        return ["bn_out"]

    def _after_run(self, ctx, values):
        self.saved[f"out_{len(self.saved)}"] = np.asarray(values.results[0])

    def _after_train(self) -> None:
        variables = {v.name.split(":")[0]: v.numpy() for v in self.trainer.tower_func.variables}
        np.savez(self.path, mean_ema=variables["bn/mean/EMA"], variance_ema=variables["bn/variance/EMA"],
                 **self.saved)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    from trainstack.tensorpack.tf1 import HorovodTrainer  # noqa: PLC0415

    trainer = HorovodTrainer()
    rank = trainer.rank
    data = [(batch[rank * HALF:(rank + 1) * HALF],) for batch in global_batches()]  # this rank's halves
    model = SyncBNModel()
    trainer.setup_graph(model.get_input_signature(), data, model.build_graph, model.get_optimizer)
    trainer.train_with_defaults(callbacks=[Record(args.out, rank)], steps_per_epoch=STEPS, max_epoch=1)


if __name__ == "__main__":
    main()
