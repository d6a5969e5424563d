"""trainstack's in-container launcher: runs a replica's command, watches it for a hang, and
restarts it at process level. Standard library only: trainstack ships this one file into every
pod that needs it (a ConfigMap mounted at /ml/launcher/) and a local run copies it into its run
directory (<run>/launcher/), so both run the same code under the same Python as the command.
It runs on Python 3.8 and later (an image's Python may be old): no newer syntax or library.

    python3 launcher.py [--hang-timeout S] [--hang-restarts N] [--grace S]
                        [--events-dir DIR] [--termination-log PATH] [--log-dir DIR]
                        [--log-max-bytes N] [--log-keep N] -- COMMAND ARG...

COMMAND runs in a session of its own; stdout and stderr are one stream in time order. Where
the launcher's own standard output is a regular file (a local run's log), the command writes
into it directly; otherwise (a pod's stdout, a pipe) the launcher copies the command's output
through, which is how it sees output either way. The launcher's own lines start with
`[trainstack]`.

Logs that outlive the pod: with --log-dir (a pod's view of the run's logs folder on the
artifact store), everything written to the launcher's stdout — the command's output and the
launcher's own lines — is also written to DIR/<role>-<index>.log while the replica runs, rotated
past --log-max-bytes keeping --log-keep rotations, as a local run's logs are (logship.py, shipped
beside this file, moves the bytes).

Hang: for --hang-timeout seconds no output, no write under $METRICS, (nearly) no CPU in the
command's process tree and no GPU utilisation (NVML, when the library is there) → the tree is
stopped (SIGTERM to its process group and descendants, SIGKILL after --grace) and the command
started again, the pod or local replica staying as it is. A launcher makes at most
--hang-restarts such restarts in a row (Huawei ModelArts, creating a training job, "auto
restart": at most 3 consecutive hang restarts); the next hang ends it with HUNG_EXIT_CODE,
which no restart policy of KubeDL retries (KubeDL v0.5.0 pkg/util/train/train_util.go:22-45,
IsRetryableExitCode: 130, 137, 138, 143).

Every restart and the final hang are appended to DIR/<role>-<index>.restarts.jsonl (the role and
index from TRAINSTACK_ROLE and TRAINSTACK_REPLICA_INDEX, as the pod has them), one JSON object a
line; the final reason also goes to the termination log, which Kubernetes reports as the
container's `lastState.terminated.message`.

SIGTERM, SIGINT and SIGHUP to the launcher are passed to the command's process group; the
launcher exits with the command's exit code (128+N for death by signal N, as a container runtime
reports it).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Mapping

if __package__:  # imported as part of trainstack
    from trainstack.launcher import logship
else:  # run as a program: logship.py is shipped beside it (the same ConfigMap or folder)
    import logship  # type: ignore[import-not-found,no-redef]

HUNG_EXIT_CODE = 125
HANG_REASON = "hung"
DEFAULT_HANG_RESTARTS = 3
# A process tree using less than this share of one core over a check interval counts as idle.
# A blocked or sleeping process uses 0; interpreters' housekeeping threads a few ms a second.
CPU_IDLE_SHARE = 0.05
# A GPU busier than this (NVML's utilisation, percent) counts as work.
GPU_IDLE_PERCENT = 5
# At most this many files under $METRICS are looked at per check.
METRICS_FILE_LIMIT = 2000
# Output is moved on at once when this much is waiting, else after BATCH_WAIT seconds more.
BATCH_BYTES = 64 << 10
BATCH_WAIT = 0.001


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    return Launcher(args).run()


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="launcher.py")
    parser.add_argument("--hang-timeout", type=float, default=0.0)
    parser.add_argument("--hang-restarts", type=int, default=DEFAULT_HANG_RESTARTS)
    parser.add_argument("--grace", type=float, default=10.0)
    parser.add_argument("--events-dir", default="")
    parser.add_argument("--termination-log", default="")
    parser.add_argument("--log-dir", default="")
    parser.add_argument("--log-max-bytes", type=int, default=logship.DEFAULT_MAX_BYTES)
    parser.add_argument("--log-keep", type=int, default=logship.DEFAULT_KEEP)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        parser.error("no command given after --")
    return args


def replica_key(env: Mapping[str, str] = os.environ) -> str:
    """The replica's `<role>-<index>`, from the contract's env (a pod reads its index from the
    label KubeDL puts on it, so one template serves every index)."""
    role = env.get("TRAINSTACK_ROLE", "replica")
    return "{}-{}".format(role, env.get("TRAINSTACK_REPLICA_INDEX", "0"))


class Launcher:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.key = replica_key()
        self.child: subprocess.Popen[bytes] | None = None
        self.pipe: int | None = None
        self.pidfd: int | None = None  # readable once the command has ended
        self.stopping = 0
        log = None
        if args.log_dir:
            log = logship.ShippedLog(args.log_dir, self.key, args.log_max_bytes, args.log_keep)
        self.output = logship.Output(log)
        # A local run's log is the launcher's stdout: the command writes into it directly.
        # A shipped log needs every byte to pass through the launcher.
        self.inherit = _is_regular(1) and log is None
        self.gpu = _Nvml() if args.hang_timeout > 0 else None

    # --- output --------------------------------------------------------------------------------

    def say(self, text: str) -> None:
        self.output.say(text)

    def record(self, event: dict[str, object]) -> None:
        if not self.args.events_dir:
            return
        event = {"time": time.time(), "replica": self.key, **event}
        line = (json.dumps(event, sort_keys=True) + "\n").encode()
        try:
            os.makedirs(self.args.events_dir, exist_ok=True)
            path = os.path.join(self.args.events_dir, self.key + ".restarts.jsonl")
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                logship.write_all(fd, line)
            finally:
                os.close(fd)
        except OSError as err:
            self.say(f"could not record a restart: {err}")

    def terminated(self, message: str) -> None:
        if not self.args.termination_log:
            return
        # one `with` per context: parenthesised context managers need Python 3.10
        with contextlib.suppress(OSError):  # noqa: SIM117
            with open(self.args.termination_log, "w", encoding="utf-8") as out:
                out.write(message[:4000])

    # --- the command ---------------------------------------------------------------------------

    def start(self) -> None:
        out: int | None = None
        if not self.inherit:
            self.pipe, out = os.pipe()
            logship.widen(self.pipe)
        self.child = subprocess.Popen(
            self.args.command,
            stdin=subprocess.DEVNULL,
            stdout=None if self.inherit else out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            preexec_fn=_die_with_parent,
        )
        if out is not None:
            os.close(out)
        if self.pidfd is not None:
            os.close(self.pidfd)
        self.pidfd = _pidfd(self.child.pid)

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        try:
            return self._run()
        finally:
            self.output.close()

    def _run(self) -> int:
        hangs = 0
        while True:
            self.start()
            began = time.time()
            code = self.watch()
            if code is not None:
                return code
            # hung
            ran = time.time() - began
            gpu = " or GPU" if self.gpu and self.gpu.ok else ""
            why = f"no output, no metrics and no CPU{gpu} for {self.args.hang_timeout:g}s"
            if hangs >= self.args.hang_restarts:
                self.say(
                    f"{self.key} hung ({why}) after {hangs} hang restart(s) in a row: "
                    "stopping it; the replica fails"
                )
                self.stop_tree()
                self.record(
                    {
                        "event": "failed",
                        "reason": HANG_REASON,
                        "detail": why,
                        "ranSeconds": ran,
                        "exitCode": HUNG_EXIT_CODE,
                        "hangRestarts": hangs,
                    }
                )
                self.terminated(f"{HANG_REASON}: {why}; {hangs} hang restart(s) in a row")
                return HUNG_EXIT_CODE
            hangs += 1
            self.say(
                f"{self.key} hung ({why}): restarting it in place "
                f"(hang restart {hangs} of at most {self.args.hang_restarts})"
            )
            code = self.stop_tree()
            self.record(
                {
                    "event": "restart",
                    "reason": HANG_REASON,
                    "detail": why,
                    "ranSeconds": ran,
                    "exitCode": code,
                    "hangRestarts": hangs,
                }
            )

    def watch(self) -> int | None:
        """Wait for the command; its exit code, or None when it hung."""
        assert self.child is not None
        timeout = self.args.hang_timeout
        tick = min(1.0, timeout / 5) if timeout > 0 else 0.5
        probe = _Activity(self.child.pid, self.gpu) if timeout > 0 else None
        last_active = time.monotonic()
        out_size = _size(1)
        while True:
            pumped = self.pump(tick)
            code = self.child.poll()
            if code is not None:
                self.drain()
                return 128 - code if code < 0 else code
            if probe is None or self.stopping:
                continue
            size = _size(1)
            active = pumped or size != out_size
            out_size = size
            if probe.busy() or active:
                last_active = time.monotonic()
            elif time.monotonic() - last_active >= timeout:
                return None

    def pump(self, wait: float) -> bool:
        """Copy what the command wrote to our stdout for up to `wait` seconds; whether any."""
        if self.pipe is None:
            self._wait_child(wait)
            return False
        copied = False
        deadline = time.monotonic() + wait
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return copied
            try:
                ready, _, _ = select.select(self._wakers(), [], [], left)
            except InterruptedError:
                continue
            if self.pipe not in ready:
                return copied  # nothing came, or the command ended (watch sees which)
            moved = self.output.move(self.pipe)
            if not moved:
                os.close(self.pipe)
                self.pipe = None
                self._wait_child(deadline - time.monotonic())
                return copied
            copied = True
            if moved < BATCH_BYTES:
                # A command writing in small pieces (a print's 8 KiB buffer) would wake the
                # launcher for each; a millisecond lets the pipe fill, for one move of many.
                time.sleep(BATCH_WAIT)

    def _wakers(self) -> list[int]:
        return [fd for fd in (self.pipe, self.pidfd) if fd is not None]

    def _wait_child(self, seconds: float) -> None:
        """Until the command ends or `seconds` pass: woken by its pidfd where Linux has them
        (5.3+, Python 3.9+), else Popen's polling wait."""
        assert self.child is not None
        if self.pidfd is not None:
            with contextlib.suppress(InterruptedError):
                select.select([self.pidfd], [], [], max(0.0, seconds))
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.child.wait(timeout=max(0.0, seconds))

    def drain(self) -> None:
        """After the command exited: copy what it left in the pipe. A descendant that still
        holds the pipe open (a process left in the background) is not waited for."""
        while self.pipe is not None:
            ready, _, _ = select.select([self.pipe], [], [], 0.1)
            if not ready:
                return
            if not self.output.move(self.pipe):
                os.close(self.pipe)
                self.pipe = None
                return

    def stop_tree(self) -> int:
        """SIGTERM to the command's process group and every descendant, SIGKILL after the
        grace period; its exit code."""
        assert self.child is not None
        pid = self.child.pid
        tree = _descendants(pid)
        _signal_tree(pid, tree, signal.SIGTERM)
        deadline = time.monotonic() + self.args.grace
        while self.child.poll() is None and time.monotonic() < deadline:
            self.pump(0.05)
        _signal_tree(pid, tree + _descendants(pid), signal.SIGKILL)
        code = self.child.wait()
        self.drain()
        return 128 - code if code < 0 else code

    def _on_signal(self, signum: int, frame: object) -> None:
        self.stopping += 1
        if self.child is not None:
            with contextlib.suppress(OSError):
                os.killpg(self.child.pid, signal.SIGTERM)


class _Activity:
    """Whether the command's process tree did work since the last call: CPU over a share of a
    core, a new process, a file under $METRICS written, or a GPU busy."""

    def __init__(self, root: int, gpu: _Nvml | None) -> None:
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
        for pid in [self.root, *_descendants(self.root)]:
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


class _Nvml:
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


def _die_with_parent() -> None:
    """The command gets SIGKILL if the launcher dies (Linux PR_SET_PDEATHSIG), as a container's
    processes die with it."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return None
    # fields after the parenthesised command name (which may contain spaces and ')')
    return text[text.rfind(")") + 2 :].split()


def _descendants(root: int) -> list[int]:
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


def _signal_tree(pid: int, tree: list[int], sig: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, sig)
    for other in tree:
        with contextlib.suppress(OSError):
            os.kill(other, sig)


def _pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None


def _is_regular(fd: int) -> bool:
    try:
        import stat

        return stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


def _size(fd: int) -> int:
    try:
        return os.fstat(fd).st_size
    except OSError:
        return -1


if __name__ == "__main__":
    sys.exit(main())
