"""Resource usage per replica, sampled while the job runs, into `usage.jsonl`.

Each line: {"t": epoch, "replica": "worker-0", "cpu_percent": …, "rss_bytes": …, "gpus": [{"index",
"util_percent", "mem_used_bytes"}]}. CPU and memory cover the replica's whole process tree
(psutil); GPU figures come from NVIDIA's management library when a GPU and driver are present,
for the devices given to that replica. A sample about once a second, or every
$TRAINSTACK_USAGE_SECONDS.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainstack import boundedjson
from trainstack.envnames import USAGE_SECONDS_ENV
from trainstack.errors import ConfigError
from trainstack.regularfile import bounded_lines, open_for_writing, open_within

if TYPE_CHECKING:
    import psutil


DEFAULT_INTERVAL_S = 1.0
_SHORTEST_S, _LONGEST_S = 0.05, 3600.0


def interval_from_env(env: Mapping[str, str] | None = None) -> float:
    """Seconds between two samples: $TRAINSTACK_USAGE_SECONDS (0.05 to 3600), else 1."""
    raw = (os.environ if env is None else env).get(USAGE_SECONDS_ENV, "").strip()
    if not raw:
        return DEFAULT_INTERVAL_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not _SHORTEST_S <= value <= _LONGEST_S:  # NaN is not within either
        raise ConfigError(
            f"{USAGE_SECONDS_ENV}={raw!r}: expected seconds from {_SHORTEST_S:g} to "
            f"{_LONGEST_S:g} between two usage samples",
            hint=f"for example {USAGE_SECONDS_ENV}=1",
        )
    return value


class Sampler:
    def __init__(
        self,
        path: Path,
        gpus: Mapping[str, tuple[str, ...]],
        interval: float = 1.0,
        tick: Callable[[], None] | None = None,
    ):
        # `tick`: called once a sample, on this thread (the progress clock, local.progress).
        self._tick = tick
        # psutil is imported by the sampling thread, off the runner's way to its first replica
        # (and `runs show`, which only reads usage files, never loads it).
        self._psutil: Any = None
        self._path = path
        self._gpus = dict(gpus)
        self._interval = interval
        self._pids: dict[str, int] = {}
        self._procs: dict[int, psutil.Process] = {}
        self._latest: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="usage-sampler", daemon=True)
        self._nvml = _Nvml.open() if any(self._gpus.values()) else None

    def track(self, key: str, pid: int) -> None:
        with self._lock:
            self._pids[key] = pid

    def untrack(self, key: str) -> None:
        with self._lock:
            self._pids.pop(key, None)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()
        if self._tick is not None:
            self._tick()  # the last step, reached after the last sample
        if self._nvml is not None:
            self._nvml.close()

    def latest(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return dict(self._latest)

    def _loop(self) -> None:
        import psutil

        self._psutil = psutil
        # A first look soon after the start, so that even short runs have a sample.
        delay = min(0.2, self._interval)
        while not self._stopped.wait(delay):
            delay = self._interval
            with self._lock:
                pids = dict(self._pids)
            if self._tick is not None:
                self._tick()
            lines = []
            for key, pid in pids.items():
                sample = self._sample(key, pid)
                if sample is not None:
                    lines.append(json.dumps(sample, sort_keys=True) + "\n")
                    with self._lock:
                        self._latest[key] = sample
            if lines:
                # Opened per write, once a second: a full disk loses those samples (the live
                # view still shows them) instead of ending the sampler with a traceback.
                # Never through a link user code put in its place (open_for_writing).
                with contextlib.suppress(OSError):
                    fd = open_for_writing(
                        self._path.parent, self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT
                    )
                    with os.fdopen(fd, "a", encoding="utf-8") as out:
                        out.writelines(lines)

    def _sample(self, key: str, pid: int) -> dict[str, Any] | None:
        psutil = self._psutil
        tree = self._tree(pid)
        if not tree:
            return None
        cpu = rss = 0.0
        read = 0
        for proc in tree:
            with contextlib.suppress(psutil.Error):
                # A zombie (exited, not yet reaped) reads rss 0 without an error (its
                # /proc/PID/statm is all zeros); a live process never does. It is not measured:
                # a sample of 0 bytes would drag the replica's chart to the floor.
                resident = proc.memory_info().rss
                if resident == 0:
                    continue
                # The first call per process only sets its baseline and reads 0.
                cpu += proc.cpu_percent(None)
                rss += resident
                read += 1
        if read == 0:
            return None  # exited (a zombie not yet reaped): nothing to measure
        sample: dict[str, Any] = {
            "t": round(time.time(), 3),
            "replica": key,
            "cpu_percent": round(cpu, 1),
            "rss_bytes": int(rss),
        }
        if self._nvml is not None and self._gpus.get(key):
            sample["gpus"] = self._nvml.sample(self._gpus[key])
        return sample

    def _tree(self, pid: int) -> list[psutil.Process]:
        psutil = self._psutil
        try:
            root = self._procs.get(pid) or psutil.Process(pid)
            members = [root, *root.children(recursive=True)]
        except psutil.Error:
            return []
        # Reuse Process objects so cpu_percent measures since the previous sample.
        tree = [self._procs.setdefault(p.pid, p) for p in members]
        return tree


class _Nvml:
    """A thin handle on pynvml; absent driver or library means no GPU figures, not an error."""

    def __init__(self, nvml: Any) -> None:
        self._nvml = nvml

    @classmethod
    def open(cls) -> _Nvml | None:
        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception:  # no library, no driver, no device: all mean "no GPU"
            return None
        return cls(pynvml)

    def sample(self, indices: tuple[str, ...]) -> list[dict[str, Any]]:
        out = []
        for index in indices:
            try:
                handle = self._nvml.nvmlDeviceGetHandleByIndex(int(index))
                util = self._nvml.nvmlDeviceGetUtilizationRates(handle)
                mem = self._nvml.nvmlDeviceGetMemoryInfo(handle)
            except Exception:  # a device that vanished or is not indexable
                continue
            out.append(
                {
                    "index": int(index),
                    "util_percent": float(util.gpu),
                    "mem_used_bytes": int(mem.used),
                }
            )
        return out

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._nvml.nvmlShutdown()


@dataclass(frozen=True)
class UsageSummary:
    replica: str
    samples: int
    cpu_mean: float
    cpu_max: float
    rss_max: int
    gpu_util_mean: float | None
    gpu_mem_max: int | None


def summarize(path: Path, *, root: Path | None = None) -> list[UsageSummary]:
    """Per-replica summary of a usage file below run directory `root` (by default its folder;
    a missing file, or one reached through a link out of `root`: no rows)."""
    root = path.parent if root is None else root
    rows: dict[str, list[dict[str, Any]]] = {}
    try:
        with open_within(root, path) as fh:
            for line in bounded_lines(fh):  # a piece of an over-long line is not JSON: skipped
                # Not JSON, not UTF-8, or a sample without its fields: skipped, as in the charts.
                with contextlib.suppress(ValueError, TypeError, KeyError):
                    sample = boundedjson.loads(line)
                    float(sample["cpu_percent"]), int(sample["rss_bytes"])
                    for g in sample.get("gpus", []):
                        float(g["util_percent"]), int(g["mem_used_bytes"])
                    rows.setdefault(str(sample["replica"]), []).append(sample)
    except OSError:  # missing, or not a file at all (a directory, a FIFO)
        return []
    out = []
    for key in sorted(rows):
        samples = rows[key]
        cpus = [float(s["cpu_percent"]) for s in samples]
        gpu = [g for s in samples for g in s.get("gpus", [])]
        out.append(
            UsageSummary(
                replica=key,
                samples=len(samples),
                cpu_mean=sum(cpus) / len(cpus),
                cpu_max=max(cpus),
                rss_max=max(int(s["rss_bytes"]) for s in samples),
                gpu_util_mean=sum(float(g["util_percent"]) for g in gpu) / len(gpu)
                if gpu
                else None,
                gpu_mem_max=max(int(g["mem_used_bytes"]) for g in gpu) if gpu else None,
            )
        )
    return out
