"""A container's memory limit, kept locally the way the kernel keeps it on a cluster.

On a cluster each replica's container runs under its `limits.memory` (the renderer sets limits
equal to requests), and a container that goes over it is killed by the kernel's OOM killer: the
pod reports `OOMKilled` with exit code 137, which KubeDL's ExitCode policy treats as retryable.
A local run without that limit would succeed where the cluster fails, so the supervisor asks
this watch, a few times a second, whether a replica's process tree is over its limit, and kills
the replica's process group with SIGKILL when it is: the same exit code, the same restart rules.

What is counted: the proportional set size (PSS) of every process in the replica's tree, from
`/proc/<pid>/smaps_rollup`, so pages that forked data-loader workers share with their parent are
counted once, as a memory cgroup charges them once. Where PSS cannot be read (not Linux, an older
kernel) the resident set size stands in. Page cache that the kernel could reclaim is not counted,
and neither is it what makes a cgroup's OOM killer fire. A spike shorter than the interval can be
missed: locally a limit is enforced at least as often as it is sampled, never more strictly.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

INTERVAL_S = 0.2


@dataclass(frozen=True)
class OverLimit:
    key: str  # "role-index"
    used: int  # bytes
    limit: int  # bytes
    limit_text: str  # as the spec wrote it (what the container's limits.memory says)

    def describe(self) -> str:
        return (
            f"OOMKilled: {_mib(self.used)} in use, over its memory limit of {self.limit_text} "
            f"({_mib(self.limit)})"
        )


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def pss_bytes(pid: int) -> int | None:
    """The process's proportional set size, or None where the kernel does not say."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024  # the kernel writes kB
    return None


class MemoryWatch:
    """Which replicas are over their limit now. ``limits``: replica key -> (bytes, text); a
    replica whose role sets no memory has no limit here (on a cluster the namespace's
    LimitRange default applies, which only the cluster knows)."""

    def __init__(self, limits: Mapping[str, tuple[int, str]], interval: float = INTERVAL_S):
        import psutil  # here, so modules that only read usage files do not load it

        self._psutil = psutil
        self._limits = dict(limits)
        self._interval = interval
        self._next = 0.0

    @property
    def active(self) -> bool:
        return bool(self._limits)

    def check(self, live: Mapping[str, int]) -> list[OverLimit]:
        """``live``: replica key -> pid of its process group leader. At most once per interval;
        otherwise an empty list."""
        now = time.monotonic()
        if not self._limits or now < self._next:
            return []
        self._next = now + self._interval
        over = []
        for key, pid in live.items():
            if key not in self._limits:
                continue
            limit, text = self._limits[key]
            used = self.tree_bytes(pid)
            if used is not None and used > limit:
                over.append(OverLimit(key, used, limit, text))
        return over

    def tree_bytes(self, pid: int) -> int | None:
        psutil = self._psutil
        try:
            root = psutil.Process(pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            return None
        total = 0
        for proc in tree:
            pss = pss_bytes(proc.pid)
            if pss is None:
                with contextlib.suppress(psutil.Error):
                    pss = proc.memory_info().rss
            total += pss or 0
        return total
