"""The runner's terminal: replica output prefixed by replica, runner events, a status display.

Replicas write to their log files, never to us; this view tails those files on its own thread,
so a slow terminal can never slow a replica down. When output arrives faster than a terminal can
usefully show, the view skips ahead and says where the full log is. On a terminal, a rich live
table (laid out by trainstack.texttable) shows each replica's state, pid, attempt, CPU and
memory; elsewhere (CI, pipes) plain lines, written without rich, which is then never imported
(it costs a run's start-up a tenth of what a no-op run takes: benchmarks/bench_local.py).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TextIO

from trainstack.logtail import Tail

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live

_TICK_S = 0.1
_PALETTE = ("cyan", "magenta", "green", "yellow", "blue", "red")
# Per replica per tick: how much to show, and how far behind before skipping ahead.
_BUDGET = 64 << 10
_SKIP_BEYOND = 1 << 20
_TTY_LINES_PER_TICK = 100
# What rich's Text drops from a string (rich.control.STRIP_CONTROL_CODES: BEL, BS, VT, FF, CR),
# dropped alike from a plain event line.
_STRIPPED = dict.fromkeys((7, 8, 11, 12, 13))


def _may_be_terminal(stream: TextIO) -> bool:
    """False when rich would certainly not treat `stream` as a terminal (rich.console.Console.
    is_terminal: TTY_COMPATIBLE=1 and a non-empty FORCE_COLOR make it one; else isatty). Only
    then is rich left unimported; otherwise rich itself decides, as it always did."""
    if os.environ.get("TTY_COMPATIBLE") == "0":
        return False
    if os.environ.get("TTY_COMPATIBLE") == "1" or os.environ.get("FORCE_COLOR"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _console(stream: TextIO) -> Console:
    from rich.console import Console

    class QuietOnClosedPipe(Console):
        """A reader that went away (`trainstack run … | head -1`) only stops the printing:
        rich's default raises SystemExit, which would end the runner and record the run as
        failed while its replicas are doing fine."""

        def on_broken_pipe(self) -> None:
            self.quiet = True
            _detach(self.file)

    return QuietOnClosedPipe(file=stream, highlight=False, soft_wrap=True)


def _detach(stream: IO[str]) -> None:
    """Point a closed pipe's descriptor at /dev/null so that nothing later (the summary, the
    interpreter's final flush) meets the broken pipe again."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


class LiveView:
    def __init__(
        self,
        logs: Mapping[str, Path],
        *,
        stream: TextIO | None = None,
        usage: Callable[[], Mapping[str, Mapping[str, Any]]] | None = None,
    ) -> None:
        self._stream = stream or sys.stdout
        # Plain output (CI, pipes, files) is written here, without rich.
        self._console = _console(self._stream) if _may_be_terminal(self._stream) else None
        self._tty = self._console is not None and self._console.is_terminal
        # Each log is <run dir>/logs/<replica>.log: nothing is read through a link out of the run.
        self._tails = {key: Tail(path, root=path.parent.parent) for key, path in logs.items()}
        self._styles = {key: _PALETTE[i % len(_PALETTE)] for i, key in enumerate(logs)}
        self._width = max((len(k) for k in logs), default=0)
        self._state: dict[str, dict[str, object]] = {k: {"state": "pending"} for k in logs}
        self._usage = usage
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="live-view", daemon=True)
        self._live: Live | None = None
        self._closed = False

    def start(self) -> None:
        if self._tty:
            from rich.live import Live

            assert self._console is not None
            self._live = Live(
                self._table(),
                console=self._console,
                transient=True,
                refresh_per_second=4,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()
        self._drain(final=True)
        if self._live is not None:
            self._live.stop()
            self._live = None
        for tail in self._tails.values():
            tail.close()

    def event(self, text: str) -> None:
        """A runner message, shown between replica lines."""
        with self._lock:
            if self._closed:
                return
            line = f"[trainstack] {text}"
            try:
                if self._console is None:
                    self._stream.write(line.translate(_STRIPPED).expandtabs(8) + "\n")
                    self._stream.flush()
                    return
                from rich.text import Text

                self._console.print(Text(line, style="bold"))
            except BrokenPipeError:  # as rich's console does (on_broken_pipe above)
                self._closed = True
                _detach(self._stream)
            except (ValueError, OSError):
                self._closed = True

    def replica(self, key: str, **fields: object) -> None:
        with self._lock:
            self._state.setdefault(key, {}).update(fields)

    # --- internals ---------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stopped.wait(_TICK_S):
            self._drain(final=False)
            if self._live is not None:
                with self._lock:
                    self._live.update(self._table())

    def _drain(self, *, final: bool) -> None:
        for key, tail in self._tails.items():
            lines, skipped = tail.poll(_BUDGET, _SKIP_BEYOND)
            if final:
                lines += tail.rest()
            if skipped:
                self.event(
                    f"{key}: {skipped / 1e6:.1f} MB of output not shown here; "
                    f"the full log is {tail.path}"
                )
            if lines:
                self._emit(key, lines)

    def _emit(self, key: str, lines: list[bytes]) -> None:
        prefix = f"{key.rjust(self._width)} | "
        with self._lock:
            if self._closed:
                return
            try:
                self._write(key, prefix, lines)
            except (BrokenPipeError, ValueError, OSError):
                # Whoever read our output went away (`… | head`): the run goes on, the logs
                # are on disk; stop writing.
                self._closed = True

    def _write(self, key: str, prefix: str, lines: list[bytes]) -> None:
        if not self._tty:
            # Plain output: one write of decoded text, no per-line rendering cost.
            text = "".join(prefix + line.decode("utf-8", "replace") + "\n" for line in lines)
            self._stream.write(text)
            self._stream.flush()
            return
        from rich.text import Text

        assert self._console is not None
        if len(lines) > _TTY_LINES_PER_TICK:
            hidden = len(lines) - _TTY_LINES_PER_TICK
            lines = lines[-_TTY_LINES_PER_TICK:]
            self._console.print(Text(f"{prefix}… {hidden} lines not shown", style="dim"))
        for line in lines:
            self._console.print(
                Text(prefix, style=self._styles[key]) + Text(line.decode("utf-8", "replace"))
            )

    def _table(self) -> RenderableType:
        from trainstack.texttable import Styled, live, table

        usage = self._usage() if self._usage else {}
        rows = []
        for key, state in self._state.items():
            sample = usage.get(key, {})
            cpu = sample.get("cpu_percent")
            rss = sample.get("rss_bytes")
            rows.append(
                (
                    Styled(key, self._styles.get(key, "")),
                    str(state.get("state", "")),
                    str(state.get("pid", "")),
                    str(state.get("attempt", "")),
                    "" if cpu is None else f"{cpu:.0f}",
                    "" if rss is None else f"{int(rss) / 2**20:.0f} MiB",
                )
            )
        return live(table(("replica", "state", "pid", "attempt", "cpu %", "memory"), rows))
