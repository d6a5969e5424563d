"""A dead man's switch for a local job: if the runner dies, its replicas must not live on.

The runner starts this module as a small sidecar process (its own session, so Ctrl-C on the
terminal does not reach it) and keeps the write end of its stdin. It tells the sidecar each
replica's process group; a clean runner says `done` before closing. End of input without `done`
means the runner is gone (SIGKILL, OOM kill, crash): the sidecar stops every group, sweeps
processes that carry the job's tag, commits the outputs and records the run as interrupted.

The runner may start the sidecar before its run has an id (`arm` tells it later), so that the
sidecar's own start-up — an interpreter — overlaps the runner's set-up instead of delaying the
first replica; a sidecar never armed has nothing to stop and exits at the end of its input.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

import trainstack


class DeadmanSwitch:
    """The runner's side: start, report groups, disarm."""

    def __init__(
        self,
        tag: str | None,
        grace_seconds: float,
        home: Path | None = None,
        run_id: str | None = None,
        run_dir: Path | None = None,
    ):
        env = dict(os.environ)
        # The sidecar imports trainstack from wherever this process did.
        root = str(Path(trainstack.__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        args = [sys.executable, "-m", "trainstack.local.deadman", tag or "", str(grace_seconds)]
        if home is not None and run_id is not None:
            args += [str(home), run_id, str(run_dir or "")]
        self._proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._pipe: IO[bytes] = self._proc.stdin
        self._ready: IO[bytes] = self._proc.stdout
        self._disarmed = False

    def wait_ready(self, timeout: float = 5.0) -> bool:
        """Wait until the sidecar listens, so that it is up before any replica exists (and its
        start-up does not compete with the replicas' first moments for the CPU)."""
        readable, _, _ = select.select([self._ready], [], [], timeout)
        return bool(readable) and self._ready.readline() == b"ready\n"

    @property
    def pid(self) -> int:
        return self._proc.pid

    def arm(self, tag: str, home: Path, run_id: str, run_dir: Path) -> None:
        """What a sidecar started without them guards: the job's tag, and the run it records
        interrupted if the runner dies (in the registry under `home`, outputs from `run_dir`)."""
        self._send("run " + json.dumps([tag, str(home), run_id, str(run_dir)]) + "\n")

    def watch(self, pgid: int) -> None:
        self._send(f"pgid {pgid}\n")

    def commit_targets(self, targets: Mapping[str, tuple[str, bool]]) -> None:
        """Where the outputs are committed if the runner dies: told through this pipe, which
        only the runner holds, never read back from the run directory (its outputs.json is
        user code's to rewrite)."""
        self._send("targets " + json.dumps(dict(targets)) + "\n")

    def disarm(self, *, wait: bool = True) -> None:
        """Tell the sidecar all is well and let it exit; safe to call more than once. `wait`:
        until it has (without: the runner goes on with the end of its run meanwhile, and a
        later `disarm()` reaps it)."""
        if not self._disarmed:
            self._disarmed = True
            self._send("done\n")
            with contextlib.suppress(OSError):
                self._pipe.close()
                self._ready.close()
        if not wait:
            return
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def _send(self, line: str) -> None:
        with contextlib.suppress(OSError):  # a dead sidecar must not take the run down
            self._pipe.write(line.encode())
            self._pipe.flush()


def _main(argv: list[str]) -> int:
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    tag, grace = argv[0], float(argv[1])
    run = argv[2:5]
    # A runner whose setup failed may have disarmed and closed this pipe already; what matters
    # then is its "done" on stdin. Unbuffered, so no flush at exit meets the closed pipe.
    with contextlib.suppress(OSError):
        os.write(sys.stdout.fileno(), b"ready\n")
    groups: list[int] = []
    targets: dict[str, tuple[str, bool]] = {}
    for raw in sys.stdin.buffer:
        line = raw.decode().strip()
        if line == "done":
            return 0
        if line.startswith("pgid "):
            groups.append(int(line.split()[1]))
        elif line.startswith("run "):
            tag, *run = (str(x) for x in json.loads(line[len("run ") :]))
        elif line.startswith("targets "):
            told = json.loads(line[len("targets ") :])
            targets = {str(k): (str(v[0]), bool(v[1])) for k, v in told.items()}
    # End of input without "done": the runner died. Only now is the rest imported, keeping the
    # sidecar's start-up small.
    if not tag:
        return 0  # never armed: the runner died before it started anything
    from trainstack.local.procgroup import kill_tagged, signal_group

    for pgid in groups:
        signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(g) for g in groups):
        time.sleep(0.1)
    for pgid in groups:
        signal_group(pgid, signal.SIGKILL)
    kill_tagged(tag)
    if len(run) >= 3 and run[2] and targets:
        # Commit outputs as the runner would have: what the job wrote reaches the bindings the
        # runner told us, never what a file in the run directory says now.
        from trainstack.local.sandbox import Layout, commit

        with contextlib.suppress(Exception):
            commit(Layout(Path(run[2])), targets)
    if len(run) >= 2:
        from trainstack.registry import Registry, RegistryError, RunStatus

        # A registry damaged meanwhile is reported by the next command that reads it.
        with contextlib.suppress(RegistryError), Registry.open(Path(run[0])) as reg:
            reg.finish(
                run[1], RunStatus.INTERRUPTED, reason="the runner died; its replicas were stopped"
            )
    return 0


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
