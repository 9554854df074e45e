"""shard_dataflow: disjoint, equal-length shards of a dataflow, one per rank (no Horovod needed)."""
from __future__ import annotations

import pytest

from trainstack.distributed import HorovodTrainer, shard_dataflow


class Counting:
    """A dataflow of 0..n-1 that counts its reset_state calls."""

    def __init__(self, n: int) -> None:
        self.n, self.resets = n, 0

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n

    def reset_state(self) -> None:
        self.resets += 1


@pytest.mark.parametrize("n, size", [(10, 2), (11, 3), (7, 7), (9, 4)])
def test_shards_are_disjoint_equal_and_cover_all_but_the_remainder(n, size):
    shards = [list(shard_dataflow(Counting(n), rank, size)) for rank in range(size)]
    assert all(len(s) == n // size for s in shards)
    assert [len(shard_dataflow(Counting(n), r, size)) for r in range(size)] == [n // size] * size
    flat = sorted(x for s in shards for x in s)
    assert flat == list(range(n // size * size))
    assert shards[1] == list(range(1, n // size * size, size))


def test_each_pass_restarts_and_reset_state_reaches_the_dataflow():
    df = Counting(6)
    shard = shard_dataflow(df, 1, 2)
    assert list(shard) == list(shard) == [1, 3, 5]
    shard.reset_state()
    assert df.resets == 1


@pytest.mark.parametrize("rank, size, error, named", [
    (2, 2, ValueError, r"rank=\.\.\.\) must be an integer in \[0, 1\], got 2"),
    (-1, 2, ValueError, r"rank=\.\.\.\) must be an integer in \[0, 1\], got -1"),
    (0, 0, ValueError, r"size=\.\.\.\) must be a positive integer, got 0"),
    (0.0, 2, TypeError, r"rank=\.\.\.\) must be"), (True, 2, TypeError, r"rank=\.\.\.\) must be")])
def test_bad_rank_or_size_is_a_clear_error(rank, size, error, named):
    with pytest.raises(error, match=named):
        shard_dataflow(Counting(4), rank, size)


def test_fewer_datapoints_than_ranks_is_an_error():
    with pytest.raises(ValueError, match="fewer than the 3 processes"):
        len(shard_dataflow(Counting(2), 0, 3))


def test_horovod_trainer_without_horovod_says_how_to_get_it():
    try:
        import horovod.tensorflow  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="scripts/install_horovod.py"):
            HorovodTrainer()
    else:
        pytest.skip("Horovod is installed here: the error path is not reachable")
