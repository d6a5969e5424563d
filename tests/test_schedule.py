"""The layout of the tests for xdist's workers (tests/schedule.py): equal contiguous blocks, each
starting with its share of the slow tests."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.schedule import laid_out


@dataclass(frozen=True)
class Item:
    name: str

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == "slow" and self.name.startswith("s") else None


def _items(slow: int, quick: int) -> list[Item]:
    return [Item(f"s{i}") for i in range(slow)] + [Item(f"q{i}") for i in range(quick)]


@pytest.mark.parametrize(
    ("slow", "quick", "workers"), [(7, 30, 4), (0, 9, 3), (5, 0, 2), (3, 2, 8)]
)
def test_each_block_starts_with_its_share_of_the_slow_tests(
    slow: int, quick: int, workers: int
) -> None:
    items = _items(slow, quick)
    out: list[Item] = laid_out(items, workers)  # type: ignore[arg-type]
    assert sorted(i.name for i in out) == sorted(i.name for i in items)  # each test once
    assert [i.name for i in out if i.name.startswith("q")] == [f"q{i}" for i in range(quick)]
    n = min(workers, len(items))
    size, extra = divmod(len(items), n)
    start = 0
    for b in range(n):
        block = out[start : start + size + (1 if b < extra else 0)]
        start += len(block)
        share = [f"s{i}" for i in range(b, slow, n)]
        assert [i.name for i in block[: len(share)]] == share, (b, block)


def test_one_worker_keeps_the_slow_tests_first_in_their_order() -> None:
    out = laid_out(_items(3, 3), 1)  # type: ignore[arg-type]
    assert [i.name for i in out] == ["s0", "s1", "s2", "q0", "q1", "q2"]
