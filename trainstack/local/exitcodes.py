"""KubeDL's `restartPolicy: ExitCode` semantics, applied to local processes."""

from __future__ import annotations

import signal

from trainstack import kubedl

# The codes KubeDL treats as transient (trainstack.kubedl); every other non-zero code is permanent.
RETRYABLE_EXIT_CODES = frozenset(kubedl.RETRYABLE_EXIT_CODES)


def normalize(returncode: int) -> int:
    """A container runtime reports death by signal N as exit code 128+N; so do we.

    `Popen.returncode` is -N when the process itself died of signal N (SIGKILL → -9 → 137).
    """
    return 128 - returncode if returncode < 0 else returncode


def is_retryable(exit_code: int, *, unconditional: bool = False) -> bool:
    if exit_code == 0:
        return False
    return unconditional or exit_code in RETRYABLE_EXIT_CODES


def describe(exit_code: int) -> str:
    if exit_code > 128:
        try:
            return f"exit code {exit_code} ({signal.Signals(exit_code - 128).name})"
        except ValueError:
            pass
    return f"exit code {exit_code}"
