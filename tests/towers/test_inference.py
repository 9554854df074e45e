"""The inferencers on their own: what they fetch, how they reduce a pass, their errors."""
from __future__ import annotations

import numpy as np
import pytest

from trainstack.towers.predict.inference import BinaryClassificationStats, ClassificationError, Inferencer, ScalarStats


def run_pass(inf: Inferencer, batches) -> dict:
    """Drive ``inf`` as a runner does: one pass of ``(results, batch_size)`` pairs."""
    inf.before_inference()
    for results, batch_size in batches:
        inf.on_fetches(results, batch_size)
    return inf.after_inference()


def test_scalar_stats_weights_batches_by_their_size():
    rng = np.random.default_rng(0)
    per_datapoint = rng.normal(size=23)
    sizes = [8, 8, 7]  # the last batch is smaller
    chunks = np.split(per_datapoint, np.cumsum(sizes)[:-1])
    inf = ScalarStats(["cost", "acc:0"], prefix="val")
    assert inf.get_fetches() == ["cost", "acc:0"]
    assert inf.stat_names() == ["val_cost", "val_acc"]
    stats = run_pass(inf, [([np.float32(c.mean()), np.array(2 * c.mean())], len(c)) for c in chunks])
    assert set(stats) == {"val_cost", "val_acc"}
    # the mean over datapoints, not the (different) mean of the batch means
    assert stats["val_cost"] == pytest.approx(per_datapoint.mean(), rel=1e-6)
    assert stats["val_acc"] == pytest.approx(2 * per_datapoint.mean(), rel=1e-6)
    assert abs(np.mean([c.mean() for c in chunks]) - per_datapoint.mean()) > 1e-4


def test_scalar_stats_without_batch_size_averages_batches_and_resets_each_pass():
    inf = ScalarStats("loss", prefix="")
    assert run_pass(inf, [([1.0], None), ([3.0], None)]) == {"loss": 2.0}
    assert run_pass(inf, [([10.0], None)]) == {"loss": 10.0}
    assert run_pass(inf, []) == {}


def test_scalar_stats_rejects_non_scalars_and_bad_names():
    inf = ScalarStats("logits")
    inf.before_inference()
    with pytest.raises(ValueError, match="'logits' must be a scalar.*shape \\(4,\\)"):
        inf.on_fetches([np.zeros(4)], 4)
    with pytest.raises(TypeError, match="tensor name"):
        ScalarStats([])
    with pytest.raises(TypeError, match="tensor name"):
        ScalarStats(["ok", 3])


def test_classification_error_is_the_true_error_over_uneven_batches():
    rng = np.random.default_rng(1)
    wrong = (rng.random(37) < 0.3).astype(np.float32)
    batches = np.split(wrong, [16, 32])  # 16, 16, 5
    inf = ClassificationError("wrong", "val_err")
    assert inf.get_fetches() == ["wrong"]
    assert inf.stat_names() == ["val_err"]
    stats = run_pass(inf, [([b], len(b)) for b in batches])
    assert stats == {"val_err": pytest.approx(wrong.mean())}
    # defaults are tensorpack's
    assert ClassificationError().get_fetches() == ["incorrect_vector"]
    assert ClassificationError().stat_names() == ["validation_error"]


def test_classification_error_needs_a_vector():
    inf = ClassificationError()
    inf.before_inference()
    with pytest.raises(ValueError, match="'incorrect_vector' must be a vector.*\\(2, 3\\)"):
        inf.on_fetches([np.zeros((2, 3))], 2)


def test_binary_classification_stats():
    pred = np.array([1, 1, 0, 1, 0, 0, 1, 0])
    label = np.array([1, 0, 0, 1, 1, 0, 1, 1])
    inf = BinaryClassificationStats("pred", "label", prefix="bin")
    stats = run_pass(inf, [([pred[:5], label[:5]], 5), ([pred[5:], label[5:]], 3)])
    tp = np.sum((pred == 1) & (label == 1))
    assert stats == {"bin_precision": pytest.approx(tp / pred.sum()),
                     "bin_recall": pytest.approx(tp / label.sum())}
    inf.before_inference()
    with pytest.raises(ValueError, match="same"):
        inf.on_fetches([pred, label[:3]], 8)


def test_custom_inferencer_template_methods():
    class MaxOf(Inferencer):
        def _get_fetches(self):
            return ["score"]

        def _before_inference(self):
            self.best = -np.inf

        def _on_fetches(self, results):
            self.best = max(self.best, float(results[0].max()))
            self.sizes.append(self.batch_size)

        def _after_inference(self):
            return {"max_score": self.best}

    inf = MaxOf()
    inf.sizes = []
    assert inf.stat_names() is None  # not declared: checked when reported
    assert run_pass(inf, [([np.array([1.0, 5.0])], 2), ([np.array([3.0])], 1)]) == {"max_score": 5.0}
    assert inf.sizes == [2, 1]

    class Bad(Inferencer):
        def _get_fetches(self):
            return "x"  # one name is fine

        def _after_inference(self):
            return [1.0]

    assert Bad().get_fetches() == ["x"]
    with pytest.raises(TypeError, match="must return a dict"):
        Bad().after_inference()
