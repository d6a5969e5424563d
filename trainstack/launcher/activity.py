"""Whether a replica's process tree is doing anything: the launcher's hang check (launcher.py,
beside which this is shipped). Standard library only and Python 3.8+, like it.

Work is: CPU over a share of one core in the tree, a new process, a file under $METRICS written,
or a GPU busy (NVML through ctypes, where the library and a GPU are there).
"""

from __future__ import annotations

import ctypes
import os
import time

# A process tree using less than this share of one core over a check interval counts as idle.
# A blocked or sleeping process uses 0; interpreters' housekeeping threads a few ms a second.
CPU_IDLE_SHARE = 0.05
# A GPU busier than this (NVML's utilisation, percent) counts as work.
GPU_IDLE_PERCENT = 5
# At most this many files under $METRICS are looked at per check.
METRICS_FILE_LIMIT = 2000


class Activity:
    """Whether the command's process tree did work since the last call: CPU over a share of a
    core, a new process, a file under $METRICS written, or a GPU busy."""

    def __init__(self, root: int, gpu: Nvml | None) -> None:
        self.root = root
        self.gpu = gpu
        self.metrics = os.environ.get("METRICS", "")
        self.cpu = self._cpu()
        self.stamp = self._metrics_stamp()
        self.when = time.monotonic()
        self.hz = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0

    def busy(self) -> bool:
        now = time.monotonic()
        cpu = self._cpu()
        used = sum(max(0, t - self.cpu.get(p, 0)) for p, t in cpu.items()) / self.hz
        new = any(p not in self.cpu for p in cpu)
        elapsed = max(now - self.when, 1e-3)
        self.cpu, self.when = cpu, now
        stamp = self._metrics_stamp()
        wrote = stamp != self.stamp
        self.stamp = stamp
        gpu = self.gpu is not None and self.gpu.busy()
        return new or wrote or gpu or used / elapsed >= CPU_IDLE_SHARE

    def _cpu(self) -> dict[int, int]:
        out = {}
        for pid in [self.root, *descendants(self.root)]:
            fields = _stat(pid)
            if fields is not None and len(fields) > 12:
                out[pid] = int(fields[11]) + int(fields[12])  # utime + stime
        return out

    def _metrics_stamp(self) -> tuple[float, int, int]:
        """(newest modification time, total size, files) of what is under $METRICS."""
        if not self.metrics or not os.path.isdir(self.metrics):
            return (0.0, 0, 0)
        newest, size, count = 0.0, 0, 0
        for folder, _dirs, files in os.walk(self.metrics):
            for name in files:
                count += 1
                if count > METRICS_FILE_LIMIT:
                    return (newest, size, count)
                try:
                    st = os.stat(os.path.join(folder, name))
                except OSError:
                    continue
                newest = max(newest, st.st_mtime)
                size += st.st_size
        return (newest, size, count)


class Nvml:
    """GPU utilisation through NVML's C library (ctypes, so no Python package is needed);
    `ok` is False where there is no NVML or no GPU. The devices are the ones this process sees:
    a pod's own, or CUDA_VISIBLE_DEVICES' indices locally."""

    class _Util(ctypes.Structure):
        _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]

    def __init__(self) -> None:
        self.handles: list[ctypes.c_void_p] = []
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() != 0:
                return
            count = ctypes.c_uint()
            if lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
                return
            wanted = _visible(count.value)
            for index in wanted:
                handle = ctypes.c_void_p()
                if lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) == 0:
                    self.handles.append(handle)
            self.lib = lib
        except (OSError, AttributeError):
            self.handles = []

    @property
    def ok(self) -> bool:
        return bool(self.handles)

    def busy(self) -> bool:
        for handle in self.handles:
            util = self._Util()
            read = self.lib.nvmlDeviceGetUtilizationRates(handle, ctypes.byref(util)) == 0
            if read and util.gpu >= GPU_IDLE_PERCENT:
                return True
        return False


def _visible(count: int) -> list[int]:
    text = os.environ.get("CUDA_VISIBLE_DEVICES")
    if text is None:
        return list(range(count))
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        return list(range(count))


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return None
    # fields after the parenthesised command name (which may contain spaces and ')')
    return text[text.rfind(")") + 2 :].split()


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        fields = _stat(int(name))
        if fields is not None and len(fields) > 1 and fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found
