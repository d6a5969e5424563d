"""The one way tests run the trainstack CLI.

`cli(*args)` runs `trainstack ARGS` in this process by default: the same command line through
`trainstack.cli.main.main`, isolated as a fresh process would be (`_in_process`): the environment
a subprocess would have been given (and nothing else) in `os.environ`, its own working
directory, its own stdin (empty), stdout and stderr captured separately, the exit code as
`python -m trainstack` would exit with it (an uncaught exception: its traceback on stderr and 1),
a timeout (SIGALRM, raising `subprocess.TimeoutExpired` as `subprocess.run` does), and nothing
left behind for the next call: environment, working directory, signal handlers, logging,
warnings filters, `sys.path`, the subreaper flag and every `functools` cache in trainstack's
modules are put back as they were.

A real `python -m trainstack` subprocess is used where a test needs one, and the choice is
visible in the test: `cli(..., subprocess=True)` for one call, `Cli(home, subprocess=True)` for
every call of a runner, `@pytest.mark.subprocess` on a test for its `cli` fixture (signals, a
closed or full stdout, orphan and process checks, import-time behaviour, resource limits), and
any `subprocess.Popen` keyword (`preexec_fn=`, ...) since only a process can take it. `start`
is always a process (it returns the running `Popen`); `invoke` runs in this process without the
isolation, so that what a test patched (Pulumi's mocks, a recorded Kubernetes API, the test's
own `os.environ`) applies, and exceptions other than the exit propagate.

Tests take it as the `cli` fixture (tests/conftest.py: a fresh home under tmp_path); module-level
helpers that need no home use `Cli()` (tests/spec/clirun.py's `trainstack`)."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import subprocess as _subprocess
import sys
import threading
import traceback
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
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
    """`cli(*args)` runs `trainstack ARGS` and returns its Result (in this process unless a
    subprocess is asked for); `start` returns the running process; `invoke` runs it in this
    process with the test's own patches applied."""

    def __init__(
        self,
        home: Path | None = None,
        *,
        forbid_traceback: bool = False,
        subprocess: bool = False,
    ) -> None:
        self.home = home
        self.forbid_traceback = forbid_traceback
        self.subprocess = subprocess
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
        if not inherit and "TRAINSTACK_HOME" in self.env:
            base["TRAINSTACK_HOME"] = self.env["TRAINSTACK_HOME"]  # never the user's home
        return {**base, **(env or {})}

    def __call__(
        self,
        *args: str | Path,
        cwd: Path = ROOT,
        timeout: float = 180,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = True,
        subprocess: bool | None = None,
        **popen: Any,
    ) -> Result:
        """`subprocess=True` (or the runner's own `subprocess`, or any Popen keyword): a real
        `python -m trainstack`; otherwise in this process, isolated as one."""
        full_env = self._env(env, inherit_env)
        if popen or (self.subprocess if subprocess is None else subprocess):
            proc = _subprocess.run(
                self.argv(*args),
                cwd=cwd,
                env=full_env,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                **popen,
            )
            result = Result(proc.returncode, proc.stdout, proc.stderr)
        else:
            result = _in_process([str(a) for a in args], cwd=cwd, env=full_env, timeout=timeout)
        if self.forbid_traceback:
            assert "Traceback" not in result.err, result.err
            assert "Traceback" not in result.out, result.out
        return result

    def start(
        self,
        *args: str | Path,
        cwd: Path = ROOT,
        env: Mapping[str, str] | None = None,
        **popen: Any,
    ) -> _subprocess.Popen[str]:
        popen.setdefault("stdout", _subprocess.PIPE)
        popen.setdefault("stderr", _subprocess.PIPE)
        return _subprocess.Popen(
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


# --- in this process, as a fresh process would run it -------------------------------------

# The signals whose handlers a verb may change (the local runner's and sweep's stop handlers,
# the timeout's own SIGALRM); each is put back after the call.
_SIGNALS = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGALRM,
    signal.SIGCHLD,
    signal.SIGPIPE,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
# What click's help wraps at when stdout is not a terminal (as in a subprocess with captured
# output): min(80, terminal width 80) - 2.
_PIPED_HELP_WIDTH = 78


def _exit_code(code: object, err: Any) -> int:
    """What `sys.exit(code)` makes a process exit with."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=err)
    return 1


def _in_process(args: list[str], *, cwd: Path, env: Mapping[str, str], timeout: float) -> Result:
    import click.formatting
    from click.testing import CliRunner

    from trainstack.cli.main import main

    timed_out = False
    with _isolated(cwd, env), CliRunner().isolation() as streams:
        click.formatting.FORCED_WIDTH = _PIPED_HELP_WIDTH
        try:
            with _alarm(timeout):
                code = _exit_code(main(args), sys.stderr)  # as `sys.exit(main())` does
        except SystemExit as done:
            code = _exit_code(done.code, sys.stderr)
        except _Timeout:
            timed_out, code = True, -signal.SIGKILL
        except Exception:
            # An uncaught exception: Python prints it and exits 1.
            traceback.print_exc(file=sys.stderr)
            code = 1
        finally:
            with contextlib.suppress(ValueError, OSError):
                sys.stdout.flush()
                sys.stderr.flush()
    out, err = streams[0].getvalue(), streams[1].getvalue()
    if timed_out:
        raise _subprocess.TimeoutExpired(["trainstack", *args], timeout, out, err)
    return Result(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


class _Timeout(BaseException):
    """Raised by SIGALRM in the verb; a BaseException, so no `except Exception` in trainstack
    swallows it."""


@contextlib.contextmanager
def _alarm(timeout: float) -> Iterator[None]:
    """`_Timeout` raised in the verb after `timeout` seconds (only the main thread gets
    signals; elsewhere there is no timeout)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _isolated(cwd: Path, env: Mapping[str, str]) -> Iterator[None]:
    main_thread = threading.current_thread() is threading.main_thread()
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_path = list(sys.path)
    saved_signals = {sig: signal.getsignal(sig) for sig in _SIGNALS} if main_thread else {}
    saved_logging = _logging_state()
    _clear_caches()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        with warnings.catch_warnings():
            yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.path[:] = saved_path
        for sig, handler in saved_signals.items():
            if handler is not None:
                signal.signal(sig, handler)
        _restore_logging(saved_logging)
        _reset_process_state()
        _clear_caches()


# Module-level dicts that remember what was read from files or a cluster.
_MEMOS = (("trainstack.plan.platformcache", "_MEMO"), ("trainstack.ui.deployed", "_CACHE"))


def _trainstack_modules() -> list[Any]:
    return [m for n, m in list(sys.modules.items()) if n.split(".")[0] == "trainstack" and m]


# functools caches whose value a fresh process would compute the same, whatever ran before: a
# CEL expression's compiled program (a function of its text alone; compiling costs far more than
# evaluating) and the digest of trainstack's own source (no test edits the package's files).
_SAME_IN_ANY_PROCESS = frozenset(
    {
        ("trainstack.policy.admission", "_program"),
        ("trainstack.policy.admission", "_free_casts"),
        ("trainstack.plan.platformcache", "_source_digest"),
    }
)


def _clear_caches() -> None:
    """A fresh process starts with empty caches: every functools cache in trainstack's modules
    (but those a fresh process would fill with the same values), and the module-level memo
    dicts that hold what was read from files."""
    for module in _trainstack_modules():
        for name, value in list(vars(module).items()):
            kept = (module.__name__, name) in _SAME_IN_ANY_PROCESS
            if isinstance(value, functools._lru_cache_wrapper) and not kept:
                value.cache_clear()
    for module_name, attr in _MEMOS:
        module = sys.modules.get(module_name)
        if module is not None:
            getattr(module, attr).clear()


def leave_subreaper() -> None:
    """This process no longer a child subreaper, if `procgroup.become_subreaper` made it one
    (the `run` verb in this process, or a test that drives a Supervisor as the runner would)."""
    procgroup = sys.modules.get("trainstack.local.procgroup")
    if procgroup is not None and procgroup._subreaper:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(procgroup._PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        procgroup._subreaper = False


def _reset_process_state() -> None:
    """What a verb sets for the rest of its process: `run` makes the process a subreaper, the
    stdout guard remembers a failed write."""
    leave_subreaper()
    stdout = sys.modules.get("trainstack.cli.stdout")
    if stdout is not None:
        stdout._failure = None


_LoggerState = tuple[int, list[logging.Handler], bool, bool]


def _logging_state() -> dict[str, _LoggerState]:
    loggers: dict[str, logging.Logger] = {"": logging.getLogger()}
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            loggers[name] = logger
    return {
        name: (lg.level, list(lg.handlers), lg.propagate, lg.disabled)
        for name, lg in loggers.items()
    }


def _restore_logging(saved: dict[str, _LoggerState]) -> None:
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and name not in saved:
            # A logger first made by the verb: as a fresh process would have it next time.
            logger.handlers[:] = []
            logger.setLevel(logging.NOTSET)
            logger.propagate = True
            logger.disabled = False
    for name, (level, handlers, propagate, disabled) in saved.items():
        logger = logging.getLogger(name or None)
        logger.setLevel(level)
        logger.handlers[:] = handlers
        logger.propagate = propagate
        logger.disabled = disabled
