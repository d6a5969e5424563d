"""A container's memory limits, kept locally the way a cluster keeps them.

- **Memory.** Each replica's container runs under its `limits.memory` (the renderer sets limits
  equal to requests), and a container over it is killed by the kernel's OOM killer: the pod
  reports `OOMKilled` with exit code 137, which KubeDL's ExitCode policy retries. Counted here:
  the proportional set size (PSS) of every process in the replica's tree, from
  `/proc/<pid>/smaps_rollup`, so pages that forked data-loader workers share with their parent
  count once, as a memory cgroup charges them once (the resident set size stands in where PSS
  cannot be read).
- **/dev/shm.** A pod's /dev/shm is a tmpfs of 64 MiB, the container runtime's default
  (containerd's `oci/spec.go`, containerd/containerd#3654; Kubernetes has no field for it,
  kubernetes/kubernetes#28272), unless the role sets `sharedMemory`, which the renderer mounts
  as a memory-backed emptyDir with that sizeLimit (the kubelet sizes its tmpfs to it: KEP-1967,
  SizeMemoryBackedVolumes, on by default since Kubernetes 1.22). A process that needs a page
  beyond it gets SIGBUS (PyTorch's data loader: "bus error ... insufficient shared memory
  (shm)"), and that exit is not one KubeDL retries. Counted here: the /dev/shm files the tree
  holds open or mapped (including unlinked ones, as PyTorch's file-descriptor sharing leaves
  them), each once. A replica that runs as a pod of the sandbox (trainstack.local.podns) has a
  tmpfs of that size as its /dev/shm, which the kernel enforces as on a cluster; the files of
  this machine's /dev/shm are then none of its.

Locally the machine's /dev/shm and memory are much larger, so a run that would fail on its
cluster would succeed here. The supervisor asks this watch up to five times a second (less
often when a check is costly: never more than a twentieth of a core) and ends an
offending replica as the cluster would: SIGKILL for memory, SIGBUS for /dev/shm. A spike shorter
than the interval can pass: locally a limit is never enforced more strictly than on a cluster.
"""

from __future__ import annotations

import contextlib
import enum
import os
import signal
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INTERVAL_S = 0.2
SHM = Path("/dev/shm")
RUNTIME_SHM_BYTES = 64 * 2**20  # containerd's default /dev/shm


class Resource(enum.Enum):
    MEMORY = "memory"
    SHM = "/dev/shm"


@dataclass(frozen=True)
class Limit:
    bytes: int
    text: str  # what sets it, for messages


@dataclass(frozen=True)
class ReplicaLimits:
    memory: Limit | None  # none: the namespace's LimitRange default, which only a cluster knows
    shm: Limit


def shm_limit(shared_memory: tuple[int, str] | None, role: str) -> Limit:
    if shared_memory is not None:
        return Limit(shared_memory[0], f"its sharedMemory of {shared_memory[1]}")
    return Limit(
        RUNTIME_SHM_BYTES,
        f"the container runtime's default of 64Mi (set resources.{role}.sharedMemory for more)",
    )


@dataclass(frozen=True)
class OverLimit:
    key: str  # "role-index"
    resource: Resource
    used: int  # bytes
    limit: Limit

    @property
    def signal(self) -> signal.Signals:
        return signal.SIGKILL if self.resource is Resource.MEMORY else signal.SIGBUS

    def describe(self) -> str:
        if self.resource is Resource.MEMORY:
            return (
                f"OOMKilled: {_mib(self.used)} in use, over its memory limit of "
                f"{self.limit.text} ({_mib(self.limit.bytes)})"
            )
        return (
            f"/dev/shm full: {_mib(self.used)} in use, over {self.limit.text} "
            f"({_mib(self.limit.bytes)}); on a cluster the next page gets SIGBUS"
        )


def full_pod_shm(limit: Limit) -> str:
    """Why a pod's replica may have got SIGBUS: its /dev/shm is a tmpfs of `limit`, and a page
    beyond a full one is a bus error (the kernel's, as on a cluster: nothing here measured it)."""
    return f"as a page beyond a full /dev/shm gets: the pod's is {limit.text} ({_mib(limit.bytes)})"


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def pss_bytes(pid: int) -> int | None:
    """The process's proportional set size, or None where the kernel does not say. Linux 4.14+
    sums it in `smaps_rollup`; older kernels list it per mapping in `smaps`."""
    for name in ("smaps_rollup", "smaps"):
        try:
            text = Path(f"/proc/{pid}/{name}").read_text()
        except OSError:
            continue
        kb = [int(line.split()[1]) for line in text.splitlines() if line.startswith("Pss:")]
        if kb:
            return sum(kb) * 1024  # the kernel writes kB
    return None


def shm_bytes(pids: Iterable[int]) -> int:
    """Bytes of /dev/shm that these processes hold open or mapped, each file counted once."""
    try:
        device = SHM.stat().st_dev
    except OSError:
        return 0  # no /dev/shm on this system: nothing can be held there
    sizes: dict[int, int] = {}

    def seen(inode: int, size: int) -> None:
        sizes[inode] = max(sizes.get(inode, 0), size)

    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    st = os.stat(f"/proc/{pid}/fd/{fd}")
                    if st.st_dev == device and stat.S_ISREG(st.st_mode):
                        seen(st.st_ino, st.st_blocks * 512)
        with contextlib.suppress(OSError), open(f"/proc/{pid}/maps", encoding="ascii") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) < 6 or not fields[4].isdigit() or fields[4] == "0":
                    continue
                major, _, minor = fields[3].partition(":")
                if os.makedev(int(major, 16), int(minor, 16)) != device:
                    continue
                start, _, end = fields[0].partition("-")
                seen(int(fields[4]), _mapped_bytes(pid, fields[0], int(end, 16) - int(start, 16)))
    return sum(sizes.values())


def _mapped_bytes(pid: int, span: str, length: int) -> int:
    """What a mapped tmpfs file really holds (its allocated blocks) where the kernel lets us
    look; otherwise the mapping's length."""
    try:
        return os.stat(f"/proc/{pid}/map_files/{span}").st_blocks * 512
    except OSError:
        return length


class MemoryWatch:
    """Which replicas are over a limit now. ``limits``: replica key -> its limits; a replica
    not in it is not watched."""

    def __init__(self, limits: Mapping[str, ReplicaLimits], interval: float = INTERVAL_S):
        import psutil  # here, so modules that only read usage files do not load it

        self._psutil = psutil
        self._limits = dict(limits)
        self._interval = interval
        self._next = 0.0
        # Replicas over a limit at the last look, not yet reported: see _check.
        self._suspect: set[tuple[str, Resource]] = set()

    def check(self, live: Mapping[str, int]) -> list[OverLimit]:
        """``live``: replica key -> pid of its process group leader. At most once per interval;
        otherwise an empty list."""
        now = time.monotonic()
        if not self._limits or now < self._next:
            return []
        over = self._check(live)
        # Reading PSS walks every page of a process: for a replica of tens of GiB one check can
        # take long. The next one waits at least twenty times as long, so the guard never takes
        # more than a twentieth of a core (benchmarks/bench_memlimit.py).
        spent = time.monotonic() - now
        self._next = now + max(self._interval, 20 * spent)
        return over

    def _check(self, live: Mapping[str, int]) -> list[OverLimit]:
        over = []
        for key, pid in live.items():
            limits = self._limits.get(key)
            tree = self._tree(pid) if limits is not None else []
            if limits is None or not tree:
                continue
            # A cgroup charges each page once, at once; the tree's PSS is read process by
            # process, and while workers fork or exit between two reads their shared pages can
            # be counted more than once (569 MiB seen for a 200 MiB parent and three forks under
            # a 400 MiB limit). Memory a replica really holds is still held at the next look, so
            # a replica is reported only when two looks in a row find it over.
            if limits.memory is not None:
                used = self._memory(tree, limits.memory.bytes)
                if self._confirmed(key, Resource.MEMORY, used > limits.memory.bytes):
                    over.append(OverLimit(key, Resource.MEMORY, used, limits.memory))
                    continue
            shm = shm_bytes(proc.pid for proc in tree)
            if self._confirmed(key, Resource.SHM, shm > limits.shm.bytes):
                over.append(OverLimit(key, Resource.SHM, shm, limits.shm))
        return over

    def _confirmed(self, key: str, resource: Resource, over: bool) -> bool:
        """Over at this look and at the one before (see _check)."""
        seen = (key, resource)
        if not over:
            self._suspect.discard(seen)
            return False
        if seen in self._suspect:
            # Reported: the replica is ended, and a recreated one starts with no suspicion.
            self._suspect.discard(seen)
            return True
        self._suspect.add(seen)
        return False

    def _tree(self, pid: int) -> list[Any]:
        """The psutil processes of the tree under ``pid`` (none: it has exited)."""
        psutil = self._psutil
        try:
            root = psutil.Process(pid)
            return [root, *root.children(recursive=True)]
        except psutil.Error:
            return []

    def _memory(self, tree: list[Any], limit: int) -> int:
        """The tree's PSS; its resident size when that is already within ``limit`` (a PSS is
        never more than the RSS, and reading it costs a hundred times more)."""
        psutil = self._psutil
        rss: dict[int, int] = {}
        for proc in tree:
            with contextlib.suppress(psutil.Error):
                rss[proc.pid] = proc.memory_info().rss
        if sum(rss.values()) <= limit:
            return sum(rss.values())
        total = 0
        for proc in tree:
            pss = pss_bytes(proc.pid)
            if pss is not None:
                total += pss
            elif _alive(proc, psutil):
                total += rss.get(proc.pid, 0)
            # else: it exited since its resident size was read (a data-loader worker ending),
            # and holds nothing. Its resident size counts in full the pages it shared with its
            # parent, whose PSS now has them: adding it charged them twice, and killed a replica
            # within its limit as its forked workers exited (532 MiB seen against 400 MiB).
        return total


def _alive(proc: Any, psutil: Any) -> bool:
    """Still running and not a zombie (an exited process's smaps read empty)."""
    try:
        return bool(proc.is_running()) and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
