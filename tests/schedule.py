"""How the suite's tests are laid out for pytest-xdist's workers.

`-n` runs with work stealing (``--dist worksteal``, unless `--dist` is given): the collection is
cut into one contiguous block per worker, and a worker that runs out takes half of the longest
queue left. With `--dist load` a worker's first batch is dealt to it for good, so a worker that
drew a hang or the longest slow tests kept dozens of queued tests while the others sat idle (a
full run measured 600 s where the others finished at 180 s).

The slow tests go first in every block, dealt round-robin, so that each worker starts on its share
of them and the waiting they do (hang timeouts, rendezvous, child processes) overlaps the other
workers' quick tests; the quick tests follow in collection order, in runs as long as the blocks
need (a module's tests stay together, and with them its module-scoped builds)."""

from __future__ import annotations

import pytest


def use_work_stealing(config: pytest.Config) -> None:
    """``--dist worksteal`` where `-n` chose ``load`` for want of a `--dist` of the caller's."""
    given = any(a == "-d" or a.startswith("--dist") for a in config.invocation_params.args)
    if getattr(config.option, "dist", "no") == "load" and not given:
        config.option.dist = "worksteal"


def laid_out(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """``items`` as ``workers`` equal contiguous blocks, each its share of the slow tests
    (round-robin) and then quick tests in their order."""
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    quick = [item for item in items if item.get_closest_marker("slow") is None]
    workers = max(1, min(workers, len(items)))
    blocks: list[list[pytest.Item]] = [slow[i::workers] for i in range(workers)]
    size, extra = divmod(len(items), workers)
    start = 0
    for i, block in enumerate(blocks):
        take = max(0, size + (1 if i < extra else 0) - len(block))
        block += quick[start : start + take]
        start += take
    blocks[-1] += quick[start:]
    return [item for block in blocks for item in block]
