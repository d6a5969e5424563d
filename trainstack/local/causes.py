"""Which failure a failed job's reason names first. When one rank of a collective job dies (a
SIGKILL, the OOM killer, a deleted pod) its peers fail after it, losing their collective (exit 1,
a gloo abort): the reason must name the death that caused the failure, not only the exits
that followed it.

Two ways a consequence can come apart from its cause: in the same look at the replicas, where
the order found is the replicas' order, not the exits' (`ordered` puts deaths from outside
first); and after the dead replica was recreated, when a peer fails later and ends the job
(`Causes` remembers each recreation, and names it when the failing replicas were already
running when it happened, within a process group's default timeout of it).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterable, Sequence

# How long after a rank vanished its peers may still fail of it: a collective waits for a lost
# peer up to the process group's timeout, 30 minutes by default (torch 2.13
# torch/distributed/constants.py:12, default_pg_timeout). A failure later than that is not
# blamed on the earlier one.
CONSEQUENCE_WINDOW_S = 30 * 60.0

_KILLED = 128 + signal.SIGKILL


def ordered(
    failures: Sequence[tuple[str, int]], from_outside: Callable[[str, int], bool]
) -> list[tuple[str, int]]:
    """The failures found together, deaths from outside (`from_outside`: SIGKILL, the memory
    limit, a hang) first, each group in the replicas' order."""
    return sorted(failures, key=lambda f: not from_outside(*f))


def killed(code: int) -> bool:
    return code == _KILLED


class Causes:
    """The recreations a job went through, in order: (replica, what ended it, when)."""

    def __init__(self) -> None:
        self._seen: list[tuple[str, str, float]] = []

    def recreated(self, key: str, text: str) -> None:
        self._seen.append((key, text, time.time()))

    def first(self, began: Iterable[float], now: float | None = None) -> str | None:
        """The earliest recreation while every failing replica was already running (`began`:
        when each one's attempt started) and recently enough to have caused its failure, said
        as the start of a reason; None when there is none."""
        now = time.time() if now is None else now
        starts = list(began)
        for key, text, at in self._seen:
            if now - at <= CONSEQUENCE_WINDOW_S and all(b <= at for b in starts):
                return f"{text} first ({key} was recreated {now - at:.1f}s before); then "
        return None
