"""examples/digits_convnet.py on several workers, as a cluster scheduler starts it.

Every task runs this script; where its cluster comes from is decided by
``trainstack.distributed.cluster_from_environment``: ``TF_CONFIG`` (Kubernetes,
Kubeflow's TFJob, the local launcher), else the ``SLURM_*`` variables of an
``srun`` step, else one local process. The workers train
``DistributedTrainerReplicated`` (synchronous all-reduce), each on its shard of
the digits (``rank`` of ``num_workers``); the log directory is shared by all of
them (a shared volume / file system): the chief writes the checkpoints there,
and ``AutoResumeTrainConfig`` makes a restarted task (a pod restarted by
``restartPolicy: OnFailure``, a job requeued by Slurm) continue from the latest
one with the same global step. An ``evaluator`` task (a TFJob Evaluator replica)
trains nothing: it evaluates each checkpoint the chief writes (``run_evaluator``).

    python examples/cluster/train_digits.py --logdir /shared/digits [--epochs 10]
    python -m trainstack.distributed.launch -n 2 examples/cluster/train_digits.py --logdir /tmp/digits
    srun python examples/cluster/train_digits.py --logdir /shared/digits   # see train_digits.sbatch
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # examples/

from trainstack.distributed import DistributedTrainerReplicated, cluster_from_environment, run_evaluator  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logdir", required=True, help="the log directory, shared by every task")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32, help="per worker")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-timeout", type=float, default=3600.0,
                        help="evaluator: stop after this many seconds without a new checkpoint")
    return parser.parse_args()


def shard(x, y, rank: int, size: int):  # noqa: ANN001, ANN201 - arrays
    """Worker ``rank``'s every ``size``-th example; equal lengths, so every worker runs as many steps."""
    n = len(x) // size * size
    return x[rank:n:size], y[rank:n:size]


def evaluate_checkpoints(args: argparse.Namespace, num_workers: int) -> None:
    """The evaluator task: the validation error of each checkpoint the chief writes."""
    import numpy as np  # noqa: PLC0415
    import tensorflow as tf  # noqa: PLC0415
    from digits_convnet import Batches, DigitsConvNet, load_split  # noqa: PLC0415

    from trainstack.inputs import TFDatasetInput  # noqa: PLC0415
    from trainstack.towers import (
        SimpleTrainer,  # noqa: PLC0415
        SmartInit,  # noqa: PLC0415
    )

    x_train, y_train, x_val, y_val = load_split(500, args.seed)
    model = DigitsConvNet()
    trainer = SimpleTrainer()  # only to build the model's variables and restore checkpoints into them
    trainer.setup_graph(model.get_input_signature(), TFDatasetInput(
        tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(args.batch_size).repeat()),
        model.build_graph, model.get_optimizer)

    def evaluate(path: str) -> None:
        SmartInit(path).init(trainer)
        wrong = 0
        for images, labels in Batches(x_val, y_val, 128, shuffle=False):
            x = model.pool(model.conv2(model.conv1(images)))
            logits = model.logits(model.fc(model.flatten(model.pool(model.conv3(x)))))
            wrong += int(np.sum(np.argmax(np.asarray(logits), axis=1) != labels))
        print(f"evaluator: {path}: validation error {wrong / len(x_val):.4f}", flush=True)

    steps_per_epoch = len(Batches(*shard(x_train, y_train, 0, num_workers), args.batch_size, shuffle=True))
    run_evaluator(evaluate, args.logdir, last_step=steps_per_epoch * args.epochs, timeout=args.eval_timeout)


def main() -> None:
    args = parse_args()
    spec = cluster_from_environment()  # reads the environment only: no TensorFlow op yet
    if spec.is_evaluator:
        evaluate_checkpoints(args, spec.num_workers)
        return
    trainer = DistributedTrainerReplicated(spec)  # first: the strategy precedes every TensorFlow op

    import keras  # noqa: PLC0415
    from digits_convnet import Batches, DigitsConvNet, load_split  # noqa: PLC0415

    from trainstack.callbacks import ModelSaver, set_logger_dir  # noqa: PLC0415
    from trainstack.towers import AutoResumeTrainConfig, launch_train_with_config  # noqa: PLC0415

    keras.utils.set_random_seed(args.seed)
    x_train, y_train, _, _ = load_split(500, args.seed)
    rank, size = spec.rank, trainer.num_workers
    set_logger_dir(args.logdir, action="keep")  # every task: the shared directory; the chief writes
    config = AutoResumeTrainConfig(  # continues from the latest checkpoint there, if any
        model=DigitsConvNet(learning_rate=args.learning_rate),
        dataflow=Batches(*shard(x_train, y_train, rank, size), args.batch_size, shuffle=True,
                         seed=args.seed + rank),
        callbacks=[ModelSaver(max_to_keep=3)],
        max_epoch=args.epochs)
    launch_train_with_config(config, trainer)
    print(f"{spec.task_name} (rank {rank} of {size}, cluster from {spec.source}) done at global step "
          f"{trainer.global_step}", flush=True)


if __name__ == "__main__":
    main()
