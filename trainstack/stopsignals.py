"""SIGINT and SIGTERM as a request to stop, for the loops that own child processes (the local
runner's supervisor, the sweep engine): the handler only asks; the loop stops its children and
records the outcome. A second signal asks again, which the supervisor takes as "no grace period".
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType


@contextlib.contextmanager
def stop_on_signals(stop: Callable[[], None]) -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM call ``stop``; the previous handlers come back after.
    Off the main thread (where Python cannot install handlers) it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        stop()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
