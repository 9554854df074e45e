"""tensorpack's ``CTC-TIMIT`` example (an LSTM with CTC on TIMIT's phonemes), ported by the port command and
run as a user runs it: ``create-lmdb.py build`` and ``stat``, then ``train-timit.py``.

The three scripts are tensorpack's own, byte for byte from commit 1547a54 (``tests/tensorpack/examples/
CTC-TIMIT/``). The data are a tiny TIMIT in its layout (``example_data.write_timit``: RIFF WAV files and
``.PHN`` alignments; each phoneme a chord of its own), made into the LMDB by ``create-lmdb.py`` itself, with
``bob.ap`` (no wheel) stood in for by ``bob_ap_stand_in.py``, a NumPy MFCC of ``bob.ap.Ceps``'s signature.
``train-timit.py`` as written stops where tensorpack's stops (it uses ``serialize``, whose import tensorpack
removed in commit 0cecfbb6); with that import line back it trains: ``tf.nn.dynamic_rnn`` of a
``MultiRNNCell`` of ``LSTMBlockCell``s with a length per utterance, ``tf.nn.ctc_loss``, the greedy decoder in
training and the beam search decoder in the ``InferenceRunner``'s tower, ``tf.edit_distance``. The unit tests
check those TF1 calls against TF1's documented behaviour, computed in NumPy.
"""
from __future__ import annotations

import ast
import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_more_examples import fails, port_into
from test_tensorpack_examples import RUNNER, TIMEOUT, run

HERE = Path(__file__).parent
FOLDER = HERE / "examples" / "CTC-TIMIT"
STAND_IN = HERE / "bob_ap_stand_in.py"
#: the import of serialize that tensorpack's commit 0cecfbb6 removed from train-timit.py (after this line)
GRADPROC = b"from tensorpack.tfutils.gradproc import GlobalNormClip, SummaryGradient\n"
SERIALIZE = b"from tensorpack.utils import serialize\n"
EPOCHS, STEPS = 4, 40


def phoneme_list() -> list[str]:
    """create-lmdb.py's ``PHONEME_LIST`` (TIMIT's 61 phonemes; a label is an index into it), read from it."""
    tree = ast.parse((FOLDER / "create-lmdb.py").read_text())
    (value,) = [n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "PHONEME_LIST"]
    return ast.literal_eval(value)


def create_lmdb(root: Path) -> dict[str, list[list[str]]]:
    """The data a user makes with create-lmdb.py, as the example's README says, in ``root``: ``build`` of
    TRAIN and of TEST (``train.mdb``, ``test.mdb``), then ``stat`` of train.mdb (``stats.data``), from a tiny
    TIMIT (``root/TIMIT``). Checks them with tensorpack 0.11's own readers: per utterance the 39 MFCC
    features (13 cepstra, their deltas and delta-deltas, float64) of each 5 ms frame and the phonemes'
    indices in ``PHONEME_LIST`` (int64); the frames' mean and sample std. Returns the phonemes written."""
    import example_data
    from scipy.io import wavfile
    from tensorpack.dataflow import LMDBSerializer
    from tensorpack.utils import serialize
    written = example_data.write_timit(str(root / "TIMIT"), {"TRAIN": 128, "TEST": 64})
    assert port_into(FOLDER, root / "ported") == {"create-lmdb.py": 4, "timitdata.py": 1, "train-timit.py": 3}
    script = root / "ported" / "CTC-TIMIT" / "create-lmdb.py"
    builds = [subprocess.Popen([sys.executable, STAND_IN, script, "build", "--dataset", root / "TIMIT" / split,
                                "--db", root / f"{split.lower()}.mdb"], cwd=root, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True) for split in ("TRAIN", "TEST")]
    try:
        outputs = [build.communicate(timeout=TIMEOUT)[0] for build in builds]
    finally:
        for build in builds:   # none left running if one timed out
            if build.poll() is None:
                build.kill()
                build.wait()
    for build, out in zip(builds, outputs):
        assert build.returncode == 0, out[-5000:]
    run([STAND_IN, script, "stat", "--db", root / "train.mdb"], root)
    phonemes = phoneme_list()
    for split, n in (("TRAIN", 128), ("TEST", 64)):
        ds = LMDBSerializer.load(str(root / f"{split.lower()}.mdb"), shuffle=False)
        ds.reset_state()
        points = list(ds)
        assert len(points) == n
        for feat, label in points:
            assert feat.dtype == np.float64 and feat.shape[1] == 39 and label.dtype == np.int64
        # the labels are the .PHN files' phonemes, as indices (in the order os.walk found the files)
        assert sorted(label.tolist() for _, label in points) == sorted(
            [phonemes.index(p) for p in seq] for seq in written[split])
        # 10 ms windows every 5 ms, less the 2 frames the deltas take
        lengths = sorted(1 + (len(wavfile.read(str(p))[1]) - 160) // 80 - 2
                         for p in (root / "TIMIT" / split).rglob("*.wav"))
        assert sorted(len(feat) for feat, _ in points) == lengths
        if split == "TRAIN":
            frames = np.concatenate([feat for feat, _ in points])
    mean, std = serialize.loads((root / "stats.data").read_bytes())
    np.testing.assert_allclose(mean, frames.mean(0), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(std, frames.std(0, ddof=1), rtol=1e-6)   # OnlineMoments' sample std
    return written


def test_train_timit_as_written_stops_at_serialize_as_tensorpacks(tmp_path):
    """train-timit.py reads its stats file with ``serialize.loads``, a name it no longer imports: tensorpack's
    commit 0cecfbb6 removed ``from tensorpack.utils import serialize``, and ``from tensorpack import *`` does
    not bind it (tensorpack 0.11, measured here). A ``NameError`` before anything trains, as in tensorpack.
    (It stops after opening its two LMDBs: one datapoint each, written here, is all it reads.)"""
    from trainstack.dataflow import DataFromList, LMDBSerializer
    namespace: dict = {}
    exec("from tensorpack import *", namespace)
    assert "serialize" not in namespace
    exec("from trainstack.tensorpack import *", namespace := {})
    assert "serialize" not in namespace
    assert SERIALIZE not in (FOLDER / "train-timit.py").read_bytes()
    for name in ("train.mdb", "test.mdb"):
        LMDBSerializer.save(DataFromList([[np.zeros((3, 39)), np.array([27, 0, 27])]], shuffle=False),
                            str(tmp_path / name))
    (tmp_path / "stats.data").write_bytes(b"")
    assert port_into(FOLDER, tmp_path / "ported")["train-timit.py"] == 3
    err = fails([RUNNER, "--max-epoch", 1, "--steps-per-epoch", 1, tmp_path / "ported" / "CTC-TIMIT" / "train-timit.py",
                 "--train", "train.mdb", "--test", "test.mdb", "--stat", "stats.data"], tmp_path)
    assert "NameError: name 'serialize' is not defined" in err, err[-3000:]
    assert "mean, std = serialize.loads(open(stat_file, 'rb').read())" in err


def test_create_lmdb_then_train_timit_learns_the_phonemes_with_ctc(tmp_path):
    """create-lmdb.py makes the LMDBs and the stats (see :func:`create_lmdb`); then, with tensorpack's import of
    ``serialize`` back (the line before commit 0cecfbb6, ported with the rest), train-timit.py trains 4 epochs
    of 40 steps of 64 utterances: the CTC cost falls, the edit distance of the greedy decoding falls, the
    InferenceRunner's (beam search, every 2 epochs) is written and falls, and the LSTMs' variables under TF1's
    names change."""
    import tensorflow as tf
    root = tmp_path / "data"
    create_lmdb(root)
    source = (FOLDER / "train-timit.py").read_bytes()
    assert source.count(GRADPROC) == 1
    folder = tmp_path / "CTC-TIMIT"
    folder.mkdir()  # the script with the import tensorpack removed, and its module
    (folder / "train-timit.py").write_bytes(source.replace(GRADPROC, GRADPROC + SERIALIZE))
    (folder / "timitdata.py").write_bytes((FOLDER / "timitdata.py").read_bytes())
    ported = port_into(folder, tmp_path / "ported")
    assert ported == {"timitdata.py": 1, "train-timit.py": 4}
    run([RUNNER, "--max-epoch", EPOCHS, "--steps-per-epoch", STEPS, tmp_path / "ported" / "CTC-TIMIT" / "train-timit.py",
         "--train", root / "train.mdb", "--test", root / "test.mdb", "--stat", root / "stats.data"], tmp_path)
    logdir = tmp_path / "train_log" / "train-timit"
    rows = [json.loads(line) for line in (logdir / "stats.jsonl").read_text().splitlines()]
    # the setters found the variable optimizer() made (tf.get_variable('learning_rate', initializer=5e-3))
    assert rows[0] == {"learning_rate": pytest.approx(5e-3), "epoch_num": 0, "global_step": 0}
    rows = rows[1:]
    assert [(r["epoch_num"], r["global_step"]) for r in rows] == [(e, e * STEPS) for e in range(1, EPOCHS + 1)]
    cost, error = [r["cost"] for r in rows], [r["error"] for r in rows]
    validation = {r["epoch_num"]: r["validation_error"] for r in rows if "validation_error" in r}
    print(f"train-timit.py: cost {' -> '.join(f'{c:.2f}' for c in cost)}; error "
          f"{' -> '.join(f'{e:.3f}' for e in error)}; validation_error {validation}")
    assert cost[-1] < 0.25 * cost[0], cost   # the moving averages of the CTC loss
    assert error[-1] < min(0.85, error[0]), error   # the greedy decoding's normalized edit distance
    # PeriodicTrigger(InferenceRunner(ds_test, [ScalarStats('error')]), every_k_epochs=2): the beam search's
    assert sorted(validation) == [2, 4] and validation[4] < min(0.5, validation[2]), validation
    # SummaryGradient, after GlobalNormClip(5): the moving average of each weight's gradient RMS, under
    # tensorpack's tags (SummaryGradient/<var>/rms)
    weights = ["rnn/multi_rnn_cell/cell_0/lstm_cell/kernel", "rnn/multi_rnn_cell/cell_0/lstm_cell/bias",
               "rnn/multi_rnn_cell/cell_1/lstm_cell/kernel", "rnn/multi_rnn_cell/cell_1/lstm_cell/bias",
               "fc/W", "fc/b"]
    assert {k[len("SummaryGradient/"):-len("/rms")] for k in rows[-1] if k.startswith("SummaryGradient/")} == set(weights)
    # the variables under TF1's names (dynamic_rnn's scope 'rnn'), changed between the epochs' checkpoints
    shapes = {"rnn/multi_rnn_cell/cell_0/lstm_cell/kernel": [39 + 128, 512],
              "rnn/multi_rnn_cell/cell_1/lstm_cell/kernel": [128 + 128, 512], "fc/W": [128, 62]}
    first, last = (tf.train.load_checkpoint(str(logdir / f"model-{k * STEPS}")) for k in (1, EPOCHS))
    # the gradients were clipped to a global norm of 5: the RMS averages, taken with the same weights, bound the
    # average global norm, sqrt(sum of size * rms^2) <= 5 (the first epoch's measured 4.98 to 5.0)
    sizes = {name: first.get_tensor(f"model/untracked/{name.replace('/', '.S')}/.ATTRIBUTES/VARIABLE_VALUE").size
             for name in weights}
    for r in rows:
        norm = np.sqrt(sum(sizes[name] * r[f"SummaryGradient/{name}/rms"] ** 2 for name in weights))
        assert 0 < norm <= 5 + 1e-3, (r["epoch_num"], norm)
    for name in weights:
        key = f"model/untracked/{name.replace('/', '.S')}/.ATTRIBUTES/VARIABLE_VALUE"
        before, after = first.get_tensor(key), last.get_tensor(key)
        assert list(after.shape) == shapes.get(name, list(after.shape)), name
        assert np.abs(after - before).max() > 1e-3, name


# -- the TF1 calls of train-timit.py, against TF1's documented behaviour -------------------------------------------

def sigmoid(v: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-v))


def test_dynamic_rnn_runs_lstm_block_cells_with_a_length_per_sequence():
    """``tf.nn.dynamic_rnn(cell, x, seqlen, initial, scope='rnn')`` of a ``MultiRNNCell`` of two
    ``LSTMBlockCell``s (TF1's formula, forget bias 1.0): the outputs are the LSTM's up to each sequence's
    length and zero after it, the last state is the state at that length (the initial one for a length of 0),
    no gradient reaches the frames past it; the variables are TF1's ``rnn/multi_rnn_cell/cell_k/lstm_cell/
    {kernel, bias}``, made once and reused when the tower is traced again. (``static_rnn`` with lengths is
    refused, naming this.)"""
    import tensorflow as tf

    from trainstack.tensorpack.tf1 import TF1CallError, TowerContext, TowerFunc, tfv1
    rnn = tfv1.contrib.rnn
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(4, 6, 3)).astype("float32")   # batch 4, 6 frames, 3 features
    lengths = np.array([6, 4, 1, 0], np.int32)
    c0, h0 = (rng.normal(size=(2, 4, 5)).astype("float32") for _ in range(2))   # per layer, batch, units

    def tower(x, seqlen, c, h):
        cell = rnn.MultiRNNCell([rnn.LSTMBlockCell(num_units=5) for _ in range(2)])
        initial = tuple(rnn.LSTMStateTuple(c[k], h[k]) for k in range(2))
        return tfv1.nn.dynamic_rnn(cell, x, seqlen, initial, dtype=tf.float32, scope="rnn")

    func = TowerFunc(tower, [tf.TensorSpec([None, None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "len"),
                             tf.TensorSpec([2, None, 5], tf.float32, "c"), tf.TensorSpec([2, None, 5], tf.float32, "h")])

    @tf.function
    def build(x, seqlen, c, h):
        with TowerContext("tower0", is_training=True):
            with tf.GradientTape() as tape:
                tape.watch(x)
                outputs, last = func(x, seqlen, c, h)
                total = tf.reduce_sum(outputs)
            return outputs, last, tape.gradient(total, x)

    outputs, last, grad = build(tf.constant(xs), tf.constant(lengths), tf.constant(c0), tf.constant(h0))
    names = {v.name.split(":")[0]: v.numpy() for v in func.variables}
    prefix = "rnn/multi_rnn_cell/cell_{}/lstm_cell/"
    assert sorted(names) == sorted(prefix.format(k) + n for k in range(2) for n in ("bias", "kernel"))
    assert names[prefix.format(0) + "kernel"].shape == (3 + 5, 20) and not names[prefix.format(1) + "bias"].any()

    def lstm(k, x, c, h):   # LSTMBlockCell: [i, ci, f, o] = [x, h] W + b; f += forget_bias
        i, ci, f, o = np.split(np.concatenate([x, h]) @ names[prefix.format(k) + "kernel"]
                               + names[prefix.format(k) + "bias"], 4)
        c = sigmoid(i) * np.tanh(ci) + c * sigmoid(f + 1.0)
        return c, np.tanh(c) * sigmoid(o)

    for b, length in enumerate(lengths):   # each sequence alone, up to its length
        state = [(c0[k, b], h0[k, b]) for k in range(2)]
        for t in range(length):
            state[0] = lstm(0, xs[b, t], *state[0])
            state[1] = lstm(1, state[0][1], *state[1])
            np.testing.assert_allclose(outputs[b, t], state[1][1], rtol=1e-5, atol=1e-6)
        assert not outputs[b, length:].numpy().any()   # zero past the length
        for k in range(2):   # the state at the length
            np.testing.assert_allclose(last[k].c[b], state[k][0], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(last[k].h[b], state[k][1], rtol=1e-5, atol=1e-6)
        assert not grad[b, length:].numpy().any() and (length == 0 or grad[b, :length].numpy().any())
    variables = list(func.variables)
    build(tf.constant(xs[:, :2]), tf.constant([2, 1, 1, 0], np.int32), tf.constant(c0), tf.constant(h0))  # retraced
    assert list(func.variables) == variables
    # static_rnn's refusal of a length per sequence names this replacement
    with pytest.raises(TF1CallError, match=r"use tf\.nn\.dynamic_rnn\(cell, tf\.stack\(inputs, axis=1\)"):
        rnn.static_rnn(rnn.LSTMBlockCell(2), [tf.zeros([1, 2])], dtype=tf.float32, sequence_length=[1])


def collapse(path: tuple[int, ...], blank: int) -> tuple[int, ...]:
    """A path's labelling: repeats merged, then blanks removed."""
    return tuple(c for c, _ in itertools.groupby(path) if c != blank)


def levenshtein(a: list[int], b: list[int]) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        row, prev = [i], row
        for j, y in enumerate(b, 1):
            row.append(min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (x != y)))
    return row[-1]


def test_ctc_loss_decoders_and_edit_distance_are_tf1s():
    """The script's CTC calls in a tower, as it makes them. ``tf.nn.ctc_loss(label, logits, seqlen,
    time_major=False)`` (TF1's signature: the labels a SparseTensor, first; the softmax taken over the
    logits' classes, the blank the last) is CTC's negative log-likelihood of the labelling: of the sum over
    every path of frames that collapses to it (Graves et al. 2006), summed here path by path.
    ``ctc_greedy_decoder`` (the training tower's) is each frame's most probable class, repeats merged and
    blanks removed. ``ctc_beam_search_decoder`` (the inference tower's; TF1's defaults: a beam of 100, one
    path, repeats merged in the output) is the most probable labelling and its log-probability.
    ``tf.edit_distance(..., normalize=True)`` is the Levenshtein distance over the truth's length."""
    import tensorflow as tf

    from trainstack.tensorpack.tf1 import TowerContext, TowerFunc, tfv1
    rng = np.random.default_rng(2)
    classes, frames = 4, 5   # 3 labels and the blank
    logits = (1.5 * rng.normal(size=(3, frames, classes))).astype("float32")   # batch-major, as the script's
    labels = [[0, 1], [2, 2, 1], [1]]
    seqlen = np.array([5, 5, 3], np.int32)
    idx = np.array([[b, t] for b, lab in enumerate(labels) for t in range(len(lab))], np.int64)
    val = np.array([c for lab in labels for c in lab], np.int32)
    shape = np.array([3, 3], np.int64)

    def tower(logits, labelidx, labelvalue, labelshape, seqlen):
        label = tfv1.SparseTensor(labelidx, labelvalue, labelshape)
        loss = tfv1.nn.ctc_loss(label, logits, seqlen, time_major=False)
        time_major = tfv1.transpose(logits, [1, 0, 2])
        greedy = tfv1.cast(tfv1.nn.ctc_greedy_decoder(time_major, seqlen)[0][0], tf.int32)
        (beam,), beam_log_prob = tfv1.nn.ctc_beam_search_decoder(time_major, seqlen)
        beam = tfv1.cast(beam, tf.int32)
        errors = [tfv1.edit_distance(p, label, normalize=True) for p in (greedy, beam)]
        dense = [tfv1.sparse.to_dense(p, default_value=-1) for p in (greedy, beam)]
        return loss, dense, beam_log_prob, errors

    func = TowerFunc(tower, [tf.TensorSpec([3, None, classes], tf.float32, "logits"),
                             tf.TensorSpec([None, 2], tf.int64, "labelidx"), tf.TensorSpec([None], tf.int32, "labelvalue"),
                             tf.TensorSpec([2], tf.int64, "labelshape"), tf.TensorSpec([3], tf.int32, "seqlen")])

    @tf.function
    def build(*inputs):
        with TowerContext("InferenceTower", is_training=False):
            return func(*inputs)

    loss, (greedy, beam), beam_log_prob, (greedy_err, beam_err) = build(logits, idx, val, shape, seqlen)
    blank, differ = classes - 1, []
    for b in range(3):
        x = logits[b, :seqlen[b]].astype(np.float64)
        probs = np.exp(x - np.log(np.exp(x).sum(1, keepdims=True)))
        by_labelling: dict[tuple[int, ...], float] = {}
        for path in itertools.product(range(classes), repeat=int(seqlen[b])):
            key = collapse(path, blank)
            by_labelling[key] = by_labelling.get(key, 0.0) + float(np.prod(probs[np.arange(len(path)), path]))
        assert loss[b].numpy() == pytest.approx(-np.log(by_labelling[tuple(labels[b])]), rel=1e-4)
        best_path = collapse(tuple(x.argmax(1)), blank)
        assert [c for c in greedy[b].numpy() if c >= 0] == list(best_path)
        best = max(by_labelling, key=by_labelling.get)
        merged = tuple(c for c, _ in itertools.groupby(best))   # TF1's merge_repeated=True on the output
        assert [c for c in beam[b].numpy() if c >= 0] == list(merged)
        differ.append(merged != best_path)
        assert beam_log_prob[b, 0].numpy() == pytest.approx(np.log(by_labelling[best]), rel=1e-4)
        for hyp, err in ((best_path, greedy_err), (merged, beam_err)):
            assert err[b].numpy() == pytest.approx(levenshtein(list(hyp), labels[b]) / len(labels[b]))
    # the data make the decoders differ where the most probable path is not the most probable labelling
    assert differ == [False, True, True]
