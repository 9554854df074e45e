"""A parameter-server training script the tests start with the launcher (--ps 1 --chief, 2 workers).

ps and worker tasks serve (``serve_unless_chief``); the chief trains
:class:`mw_model.Classifier` with DistributedTrainerParameterServer for
``--steps`` x ``--epochs`` scheduled steps, with ModelSaver in ``--out``, then
writes its validation accuracy to ``--out/accuracy.txt``. ``--legacy``: the
seeds' form, ``DistributedReplicatedTrainer(config, server).train()`` with a
TrainConfig whose data is a TFDatasetInput (ps/worker tasks pass their
``tf.distribute.Server``, the chief its ClusterSpec).
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tensorflow as tf  # noqa: E402

from trainstack.distributed import (  # noqa: E402
    ClusterSpec,
    DistributedReplicatedTrainer,
    DistributedTrainerParameterServer,
    serve_unless_chief,
)

if "--legacy" in sys.argv:
    spec = ClusterSpec.from_tf_config()
    server = spec if spec.task_type == "chief" else tf.distribute.Server(
        tf.train.ClusterSpec(spec.as_dict()), job_name=spec.task_type, task_index=spec.task_index)
else:
    spec = serve_unless_chief()  # ps and workers serve here until the launcher stops them

from mw_model import BATCH, Classifier, make_data  # noqa: E402

from trainstack.callbacks import ModelSaver, set_logger_dir  # noqa: E402
from trainstack.inputs import TFDatasetInput  # noqa: E402
from trainstack.towers import TrainConfig  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--legacy", action="store_true")
    args = parser.parse_args()
    x, y = make_data()
    xv, yv = make_data(512, seed=1)

    def dataset_fn() -> tf.data.Dataset:
        return (tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x)).repeat()
                .batch(BATCH, drop_remainder=True))

    model = Classifier()
    if spec.task_type == "chief":  # in the --legacy form every task gets here; only the chief logs
        set_logger_dir(args.out, action="d")
    if args.legacy:
        config = TrainConfig(model=model, data=TFDatasetInput(dataset_fn()), callbacks=[ModelSaver()],
                             steps_per_epoch=args.steps, max_epoch=args.epochs)
        DistributedReplicatedTrainer(config, server).train()
    else:
        trainer = DistributedTrainerParameterServer(spec)
        trainer.setup_graph(model.get_input_signature(), dataset_fn, model.build_graph,
                            model.get_optimizer)
        trainer.train_with_defaults(callbacks=[ModelSaver()], steps_per_epoch=args.steps,
                                    max_epoch=args.epochs)
    accuracy = model.accuracy(xv, yv)
    with open(os.path.join(args.out, "accuracy.txt"), "w") as f:
        f.write(f"{accuracy}\n")
    print(f"chief done, accuracy={accuracy:.3f}", flush=True)


if __name__ == "__main__":
    main()
