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

import ctypes
import os
import select
import signal
import sys
import time

if __package__:  # imported as part of trainstack
    from trainstack.launcher import activity, logship
else:  # run as a program: its modules are shipped beside it (the same ConfigMap or folder)
    import activity  # type: ignore[import-not-found,no-redef]
    import logship  # type: ignore[import-not-found,no-redef]

HUNG_EXIT_CODE = 125
HANG_REASON = "hung"
DEFAULT_HANG_RESTARTS = 3
# Output is moved on at once when this much is waiting, else after BATCH_WAIT seconds more.
BATCH_BYTES = 64 << 10
BATCH_WAIT = 0.001


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    return Launcher(args).run()


class Options:
    """The command line, read by hand: argparse (with re, gettext and enum behind it) would be
    most of the launcher's start-up time, paid by every replica start."""

    hang_timeout = 0.0
    hang_restarts = DEFAULT_HANG_RESTARTS
    grace = 10.0
    events_dir = ""
    termination_log = ""
    log_dir = ""
    log_max_bytes = logship.DEFAULT_MAX_BYTES
    log_keep = logship.DEFAULT_KEEP

    def __init__(self) -> None:
        self.command: list[str] = []


_TYPES = {
    "hang-timeout": float,
    "hang-restarts": int,
    "grace": float,
    "events-dir": str,
    "termination-log": str,
    "log-dir": str,
    "log-max-bytes": int,
    "log-keep": int,
}


def _parse(argv: list[str]) -> Options:
    options = Options()
    rest = list(argv)
    while rest:
        word = rest.pop(0)
        if word == "--":
            options.command = rest
            break
        name, eq, value = word[2:].partition("=")
        if not word.startswith("--") or name not in _TYPES:
            raise _usage(f"unknown option {word!r}")
        if not eq:
            if not rest:
                raise _usage(f"--{name} needs a value")
            value = rest.pop(0)
        try:
            setattr(options, name.replace("-", "_"), _TYPES[name](value))
        except ValueError:
            raise _usage(f"--{name}: {value!r} is not a {_TYPES[name].__name__}") from None
    if not options.command:
        raise _usage("no command given after --")
    return options


def _usage(problem: str) -> SystemExit:
    sys.stderr.write(
        "usage: launcher.py [--hang-timeout S] [--hang-restarts N] [--grace S] "
        "[--events-dir DIR] [--termination-log PATH] [--log-dir DIR] [--log-max-bytes N] "
        f"[--log-keep N] -- COMMAND ARG...\nlauncher.py: error: {problem}\n"
    )
    return SystemExit(2)


def replica_key() -> str:
    """The replica's `<role>-<index>`, from the contract's env (a pod reads its index from the
    label KubeDL puts on it, so one template serves every index)."""
    env = os.environ
    role = env.get("TRAINSTACK_ROLE", "replica")
    return "{}-{}".format(role, env.get("TRAINSTACK_REPLICA_INDEX", "0"))


class Launcher:
    def __init__(self, args: Options) -> None:
        self.args = args
        self.key = replica_key()
        self.child: _Child | None = None
        self.pipe: int | None = None
        self.pidfd: int | None = None  # readable once the command has ended
        self.stopping = 0
        self.stopped_at: float | None = None  # when the first stop signal came
        log = None
        if args.log_dir:
            log = logship.ShippedLog(args.log_dir, self.key, args.log_max_bytes, args.log_keep)
        self.output = logship.Output(log)
        # A local run's log is the launcher's stdout: the command writes into it directly.
        # A shipped log needs every byte to pass through the launcher.
        self.inherit = _is_regular(1) and log is None
        if not self.inherit:
            # Our stdout's pipe (a pod's log FIFO) as wide as the command's: each move of its
            # output takes one call, not one per 64 KiB. Nothing happens where it is no pipe.
            logship.widen(1)
        self.gpu = activity.Nvml() if args.hang_timeout > 0 else None

    # --- output --------------------------------------------------------------------------------

    def say(self, text: str) -> None:
        self.output.say(text)

    def record(self, event: dict[str, object]) -> None:
        if not self.args.events_dir:
            return
        import json  # only when there is something to record: it is slow to import

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
        with logship.quiet():  # noqa: SIM117
            with open(self.args.termination_log, "w", encoding="utf-8") as out:
                out.write(message[:4000])

    # --- the command ---------------------------------------------------------------------------

    def start(self) -> None:
        out: int | None = None
        if not self.inherit:
            self.pipe, out = os.pipe()
            logship.widen(self.pipe)
        self.child = _Child(self.args.command, out)
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
        probe = activity.Activity(self.child.pid, self.gpu) if timeout > 0 else None
        last_active = time.monotonic()
        out_size = _size(1)
        while True:
            pumped = self.pump(tick)
            code = self.child.poll()
            if code is not None:
                if self.stopping:
                    self.finish_group()
                self.drain()
                return 128 - code if code < 0 else code
            if self.stopping:
                self.escalate()
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
            with logship.quiet(InterruptedError):
                select.select([self.pidfd], [], [], max(0.0, seconds))
            return
        deadline = time.monotonic() + max(0.0, seconds)
        while self.child.poll() is None and time.monotonic() < deadline:
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

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
        tree = activity.descendants(pid)
        _signal_tree(pid, tree, signal.SIGTERM)
        deadline = time.monotonic() + self.args.grace
        while self.child.poll() is None and time.monotonic() < deadline:
            self.pump(0.05)
        _signal_tree(pid, tree + activity.descendants(pid), signal.SIGKILL)
        code = self.child.wait()
        self.drain()
        return 128 - code if code < 0 else code

    def _on_signal(self, signum: int, frame: object) -> None:
        """SIGTERM, SIGINT and SIGHUP go on to the command's process group as they came."""
        self.stopping += 1
        if self.stopped_at is None:
            self.stopped_at = time.monotonic()
        if self.child is not None:
            with logship.quiet():
                os.killpg(self.child.pid, signum)

    def escalate(self) -> None:
        """A command still running --grace seconds after a stop was passed on is killed, as
        the kubelet would kill the container."""
        assert self.child is not None and self.stopped_at is not None
        if time.monotonic() - self.stopped_at >= self.args.grace:
            with logship.quiet():
                os.killpg(self.child.pid, signal.SIGKILL)

    def finish_group(self) -> None:
        """The command's own process ended on a stop, but its process group may live on: `sh`
        dies of SIGTERM at once while the program it started (its last command, not exec'd)
        is still checkpointing. When a PID namespace's init exits, the kernel SIGKILLs what is
        left in it, so a launcher that left with `sh` killed that program mid-checkpoint. The
        group gets what is left of the grace period, then SIGKILL; its orphans, adopted by the
        launcher where it is the pod's PID 1, are reaped."""
        assert self.child is not None and self.stopped_at is not None
        pgid = self.child.pid
        deadline = self.stopped_at + self.args.grace
        while _group_alive(pgid):
            _reap_adopted()
            if time.monotonic() >= deadline:
                with logship.quiet():
                    os.killpg(pgid, signal.SIGKILL)
                break
            self.pump(0)
            time.sleep(0.02)
        _reap_adopted()


class _Child:
    """The command, in a session of its own, stdin from /dev/null, stdout to `out` (None: the
    launcher's) and stderr to the same place, nothing else inherited; forked and exec'd by hand
    (subprocess would add its imports to every start)."""

    def __init__(self, argv: list[str], out: int | None) -> None:
        self.returncode: int | None = None
        self.pid = os.fork()
        if self.pid == 0:  # the child: nothing here may return
            try:
                os.setsid()
                _die_with_parent()
                # Python ignores SIGPIPE (and SIGXFSZ); the command gets the defaults back, as
                # subprocess's restore_signals gives them.
                for name in ("SIGPIPE", "SIGXFSZ"):
                    if hasattr(signal, name):
                        signal.signal(getattr(signal, name), signal.SIG_DFL)
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                if out is not None:
                    os.dup2(out, 1)
                os.dup2(1, 2)
                _close_from(3)
                os.execvp(argv[0], argv)
            except OSError as err:
                os.write(2, f"launcher.py: cannot run {argv[0]!r}: {err}\n".encode())
                # As POSIX shells and container runtimes say it: 126 found but not runnable,
                # 127 not found.
                os._exit(127 if isinstance(err, FileNotFoundError) else 126)
            finally:
                os._exit(127)

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                self.returncode = _exit_code(status)
        return self.returncode

    def wait(self) -> int:
        while self.returncode is None:
            try:
                _, status = os.waitpid(self.pid, 0)
            except InterruptedError:
                continue
            self.returncode = _exit_code(status)
        return self.returncode


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _reap_adopted() -> None:
    """Collect the exit of every child that has ended: as a pod's PID 1 the launcher adopts
    the command's orphans, which stay zombies (and their group alive) until reaped."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _exit_code(status: int) -> int:
    """As Popen says it: the exit status, or -N for death by signal N."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _close_from(low: int) -> None:
    """Close every descriptor from `low` up (what the launcher itself inherited), as
    subprocess's close_fds does: those listed in /proc/self/fd, else up to a thousand."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(low, 1024))
    for fd in fds:
        if fd >= low:
            with logship.quiet():
                os.close(fd)


def _die_with_parent() -> None:
    """The command gets SIGKILL if the launcher dies (Linux PR_SET_PDEATHSIG), as a container's
    processes die with it."""
    with logship.quiet(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)


def _signal_tree(pid: int, tree: list[int], sig: int) -> None:
    with logship.quiet():
        os.killpg(pid, sig)
    for other in tree:
        with logship.quiet():
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
