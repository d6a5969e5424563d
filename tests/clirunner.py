"""The one way tests run the trainstack CLI: `python -m trainstack` as a real subprocess, with a
state home of its own. Where a test must patch what a verb reaches (Pulumi's mocks, a recorded
Kubernetes API), `invoke` runs the same command line in this process instead.

Tests take it as the `cli` fixture (tests/conftest.py: a fresh home under tmp_path); module-level
helpers that need no home use `Cli()` (tests/spec/clirun.py's `trainstack`)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def output(self) -> str:
        """Both streams, as a terminal would show them (stdout first)."""
        return self.out + self.err

    # The names of subprocess.CompletedProcess, which many tests read.
    @property
    def returncode(self) -> int:
        return self.code

    @property
    def stdout(self) -> str:
        return self.out

    @property
    def stderr(self) -> str:
        return self.err


class Cli:
    """`cli(*args)` runs `trainstack ARGS` and returns its Result; `start` returns the running
    process; `invoke` runs it in this process."""

    def __init__(self, home: Path | None = None, *, forbid_traceback: bool = False) -> None:
        self.home = home
        self.forbid_traceback = forbid_traceback
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT)
        # The caller's own settings must not leak into a test's run.
        for name in ("TRAINSTACK_COMPONENTS", "NVIDIA_VISIBLE_DEVICES"):
            env.pop(name, None)
        if home is not None:
            env["TRAINSTACK_HOME"] = str(home)
        self.env = env

    @staticmethod
    def argv(*args: str | Path) -> list[str]:
        return [sys.executable, "-m", "trainstack", *map(str, args)]

    def _env(self, env: Mapping[str, str] | None, inherit: bool) -> dict[str, str]:
        base = dict(self.env) if inherit else {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
        return {**base, **(env or {})}

    def __call__(
        self,
        *args: str | Path,
        cwd: Path = ROOT,
        timeout: float = 180,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = True,
        **popen: Any,
    ) -> Result:
        proc = subprocess.run(
            self.argv(*args),
            cwd=cwd,
            env=self._env(env, inherit_env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            **popen,
        )
        if self.forbid_traceback:
            assert "Traceback" not in proc.stderr, proc.stderr
            assert "Traceback" not in proc.stdout, proc.stdout
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def start(
        self,
        *args: str | Path,
        cwd: Path = ROOT,
        env: Mapping[str, str] | None = None,
        **popen: Any,
    ) -> subprocess.Popen[str]:
        popen.setdefault("stdout", subprocess.PIPE)
        popen.setdefault("stderr", subprocess.PIPE)
        return subprocess.Popen(
            self.argv(*args), cwd=cwd, env=self._env(env, True), text=True, **popen
        )

    def invoke(self, *args: str | Path, env: Mapping[str, str] | None = None) -> Result:
        """The same command line through `trainstack.cli.main.main` in this process (so what a
        test patched applies), its output captured; exceptions other than the exit propagate."""
        from click.testing import CliRunner

        from trainstack.cli.main import main

        extra = {"TRAINSTACK_HOME": str(self.home)} if self.home is not None else {}
        with CliRunner().isolation(env={**extra, **(env or {})}) as streams:
            try:
                # Without standalone mode click returns an exit code (validate's 2) instead
                # of exiting; `python -m trainstack` exits with it.
                returned = main([str(a) for a in args])
                code = returned if isinstance(returned, int) else 0
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
        out, err = streams[0], streams[1]
        return Result(code, out.getvalue().decode(), err.getvalue().decode())
