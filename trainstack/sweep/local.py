"""Local trials: each one `trainstack run TRIAL.yaml --local` in its own process (and session,
so a terminal's Ctrl-C reaches the sweep alone, which stops each trial once, with grace). The run
is an ordinary local run in the registry; its metrics are read from its run directory. A trial
also stops when the sweep's process dies, however it dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from trainstack.contract.rundir import RunDir
from trainstack.registry import Registry, RunFilter, RunRecord, RunStatus
from trainstack.registry.home import registry_path


class LocalLauncher:
    def __init__(
        self, home: Path, logs: Path, *, grace_seconds: float = 10.0, install: bool = True
    ) -> None:
        self.home, self.logs = home, logs
        self.grace_seconds, self.install = grace_seconds, install

    def start(self, spec: Path, name: str) -> LocalTrial:
        self.logs.mkdir(parents=True, exist_ok=True)
        started = time.time()
        argv = [
            sys.executable,
            "-m",
            "trainstack.cli.main",
            "run",
            str(spec),
            "--local",
            "--home",
            str(self.home),
            "--grace",
            str(self.grace_seconds),
        ]
        if not self.install:
            argv.append("--no-install")
        with (self.logs / f"{name}.log").open("wb") as log:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_stop_with_parent,
            )
        return LocalTrial(self.home, name, proc, started)


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _stop_with_parent() -> None:
    """In the trial's process before it runs: should the sweep die without stopping it
    (SIGKILL), the kernel sends the trial's runner SIGINT, its own Ctrl-C, so it stops its
    replicas and records the run as cancelled; nothing is left running. Linux only; elsewhere
    a killed sweep's trials run to their end."""
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGINT, 0, 0, 0)


class LocalTrial:
    def __init__(
        self, home: Path, name: str, proc: subprocess.Popen[bytes], started: float
    ) -> None:
        self.home, self.name, self.proc, self.started = home, name, proc, started
        self._record: RunRecord | None = None

    def poll(self) -> bool:
        return self.proc.poll() is not None

    def succeeded(self) -> bool:
        record = self._find(refresh=True)
        return (
            self.proc.returncode == 0
            and record is not None
            and record.status is RunStatus.SUCCEEDED
        )

    def reason(self) -> str:
        record = self._find(refresh=True)
        if record is None:
            return (
                f"`trainstack run` exited with code {self.proc.returncode} before recording "
                "the run (see the trial's log in the sweep's folder)"
            )
        return f"run {record.status.value}: {record.reason or 'no reason recorded'}"

    def run_id(self) -> str | None:
        record = self._find()
        return record.id if record else None

    def metrics(self) -> Path | None:
        record = self._find()
        return RunDir(record.run_dir).metrics if record and record.run_dir else None

    def stop(self) -> None:
        if self.proc.poll() is None:
            # The runner's own Ctrl-C: it stops its replicas and records the run as cancelled.
            os.kill(self.proc.pid, signal.SIGINT)

    def wait(self, timeout: float) -> None:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()  # a second SIGINT: the runner stops its replicas without grace
            self.proc.wait()

    def _find(self, *, refresh: bool = False) -> RunRecord | None:
        if self._record is not None and not refresh:
            return self._record
        if not registry_path(self.home).exists():
            return None
        with Registry.open(self.home) as reg:
            # A run of the same name from an earlier sweep of that name is not this trial's.
            found = reg.list(RunFilter(name=self.name, since=self.started, limit=1))
        if found:
            self._record = found[0]
        return self._record
