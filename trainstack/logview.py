"""`trainstack logs`: a run's replica logs, whole or tailed, filtered, optionally followed."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from trainstack.errors import NotFoundError, UserError
from trainstack.logfiles import Lines, chain
from trainstack.logtail import CHUNK, Tail, last_lines
from trainstack.regularfile import describe, open_within

_FOLLOW_TICK_S = 0.2


# A line trainstack itself wrote into a replica's log (the runner, the launcher), after the
# `<role>-<index> | ` a merged stream puts in front: `logs --system` / `--no-system`.
SYSTEM_LINE = re.compile(rb"^(?:[a-z0-9][-a-z0-9]*-\d+ \| )?\[trainstack\] ")
LineFilter = Callable[[bytes], bool]

# ECMA-48's escape sequences as terminals read them: CSI (`ESC [` or the 8-bit 0x9b, then
# parameters, intermediates and a final byte: colours, cursor moves), OSC and the other strings
# (`ESC ]`, `ESC P`, ... ended by BEL or `ESC \\`: titles, hyperlinks), and a lone ESC with one
# byte after it. A page (the console's, the report's) would show each as stray characters; a
# terminal reads them, so `trainstack logs` leaves them in.
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|\x1b[]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[ -~]?"
)


def plain(text: str) -> str:
    """`text` without its terminal escape codes."""
    return _ESCAPES.sub("", text)


@dataclass(frozen=True)
class LogFile:
    role: str
    index: int
    path: Path
    # No log is read through a link out of this folder (trainstack.regularfile.open_within);
    # None: the run directory (`<run dir>/logs/<role>-<index>.log`).
    root: Path | None = None

    @property
    def run_dir(self) -> Path:
        return self.root if self.root is not None else self.path.parent.parent

    @property
    def key(self) -> str:
        """How the replica is shown (and its log file named): `role-index`."""
        return f"{self.role}-{self.index}"


def replica_named(key: str) -> tuple[str, int] | None:
    """(role, index) of a `<role>-<index>` read from a file's name or a URL (the one place a
    replica key is parsed back; everywhere else a replica travels as role and index)."""
    role, _, index = key.rpartition("-")
    return (role, int(index)) if role and index.isdigit() else None


def _log_file(path: Path, root: Path | None) -> LogFile | None:
    """The replica a log file belongs to, read once from its name (`<role>-<index>.log`)."""
    found = replica_named(path.stem)
    return LogFile(found[0], found[1], path, root) if found else None


def select(
    logs_dir: Path, role: str | None, index: int | None, *, root: Path | None = None
) -> list[LogFile]:
    found = sorted(
        (f for p in logs_dir.glob("*-*.log") if (f := _log_file(p, root)) is not None),
        key=lambda f: (f.role, f.index),
    )
    chosen = [
        f for f in found if (role is None or f.role == role) and (index is None or f.index == index)
    ]
    if not chosen and root is None and not logs_dir.parent.is_dir():
        raise NotFoundError(
            f"no logs: the run directory {logs_dir.parent} no longer exists",
            hint="it was deleted or moved; the run registry still records the run",
        )
    if not chosen:
        have = ", ".join(f.key for f in found) or "none yet"
        wanted = "-".join(x for x in (role, None if index is None else str(index)) if x)
        raise NotFoundError(f"no log for {wanted or 'this run'} in {logs_dir} (replicas: {have})")
    return chosen


def wait_for(
    logs_dir: Path, role: str | None, index: int | None, *, running: Callable[[], bool] | None
) -> list[LogFile]:
    """The selected logs; while `running()` says the run is still setting up, wait for its
    replicas' logs to appear (without `running`, a missing log is an error at once)."""
    while True:
        try:
            return select(logs_dir, role, index)
        except NotFoundError:
            if running is None or not running():
                raise
            time.sleep(_FOLLOW_TICK_S)


def grep_lines(write: Callable[[bytes], None], keep: LineFilter | None) -> Callable[[bytes], None]:
    """`write`, passed only whole lines that `keep` keeps (pod logs arrive in chunks)."""
    if keep is None:
        return write
    lines = Lines()

    def filtered(data: bytes) -> None:
        for line in lines.feed(data):
            if keep(line):
                write(line + b"\n")

    return filtered


def compile_grep(pattern: str | None) -> re.Pattern[bytes] | None:
    if pattern is None:
        return None
    try:
        return re.compile(pattern.encode())
    except re.error as err:
        raise UserError(f"--grep {pattern!r} is not a valid regular expression: {err}") from None


def line_filter(grep: re.Pattern[bytes] | None, system: bool | None) -> LineFilter | None:
    """Lines matching `grep`; with `system` True only trainstack's own lines, False none of
    them, None all."""
    if grep is None and system is None:
        return None

    def keep(line: bytes) -> bool:
        if system is not None and bool(SYSTEM_LINE.match(line)) != system:
            return False
        return grep is None or grep.search(line) is not None

    return keep


def show(
    files: list[LogFile],
    write: Callable[[bytes], None],
    *,
    tail: int | None = None,
    keep: LineFilter | None = None,
    follow: Callable[[], bool] | None = None,
) -> None:
    """Write the selected logs; with `follow`, keep writing new lines while it returns True."""
    prefixed = len(files) > 1

    def emit(key: str, lines: list[bytes]) -> None:
        picked = [ln for ln in lines if keep is None or keep(ln)]
        if not picked:
            return
        head = f"{key} | ".encode() if prefixed else b""
        write(b"".join(head + ln + b"\n" for ln in picked))

    # Filtered or tailed, a progress bar's `\r` ends a line; shown whole, the log is as written.
    redraws = keep is not None
    tails = []
    for f in files:
        # Following, what is shown first ends where the log ended when looked at, and the tail
        # goes on from there: a line the replica wrote in between is shown once, not lost.
        upto = _size(f.path) if follow is not None else None
        # Kept rotations first (docs/local.md, "Logs and usage"), oldest to newest.
        try:
            if tail is not None:
                emit(f.key, _last_lines_of_chain(f.path, tail, f.run_dir, upto))
            elif not prefixed and keep is None:
                for data in _raw_chunks(f, upto):
                    write(data)
            else:
                for part in chain(f.path):
                    limit = upto if part == f.path else None
                    for chunk in _line_chunks(part, f.run_dir, redraws, limit):
                        emit(f.key, chunk)
        except OSError as err:  # a link out of the run directory, a FIFO, unreadable
            raise UserError(
                f"cannot read the log of {f.key} ({err.filename or f.path}): {describe(err)}",
                hint="a replica's log is a file trainstack writes in its run directory; "
                "this one was replaced",
            ) from None
        if follow is not None:
            tails.append(Tail(f.path, root=f.run_dir, start=upto or 0, redraws=redraws))
    if follow is None:
        return
    while True:
        still = follow()
        for f, t in zip(files, tails, strict=True):
            while True:
                lines, _ = t.poll(CHUNK)
                if not lines:
                    break
                emit(f.key, lines)
            if not still:
                emit(f.key, t.rest())
        if not still:
            break
        time.sleep(_FOLLOW_TICK_S)
    for t in tails:
        t.close()


def download(files: list[LogFile], dest: Path) -> list[Path]:
    """Each replica's whole log (its kept rotations first) into `dest/<role>-<index>.log`."""
    from trainstack.outfile import write_chunks

    return [write_chunks(dest / f"{f.key}.log", _raw_chunks(f)) for f in files]


def _raw_chunks(f: LogFile, upto: int | None = None) -> Iterator[bytes]:
    """The log's bytes (of its current file, the first `upto`); a read that fails is a
    UserError (not an OSError, which the writer would report as its own)."""
    try:
        for part in chain(f.path):
            fh: BinaryIO
            with open_within(f.run_dir, part) as fh:
                yield from _chunks(fh, upto if part == f.path else None)
    except OSError as err:
        raise UserError(
            f"cannot read the log of {f.key} ({err.filename or f.path}): {describe(err)}"
        ) from None


def _chunks(fh: BinaryIO, upto: int | None) -> Iterator[bytes]:
    """`fh`'s bytes to its end, or to byte `upto`."""
    left = upto
    while data := fh.read(CHUNK if left is None else min(CHUNK, left)):
        yield data
        if left is not None:
            left -= len(data)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # gone: nothing of it is shown, so its tail starts at its beginning
        return 0


def _last_lines_of_chain(path: Path, count: int, root: Path, upto: int | None) -> list[bytes]:
    lines: list[bytes] = []
    for part in reversed(chain(path)):
        end = upto if part == path else None
        lines = last_lines(part, count - len(lines), root=root, end=end) + lines
        if len(lines) >= count:
            break
    return lines


def _line_chunks(
    path: Path, root: Path, redraws: bool, upto: int | None = None
) -> Iterator[list[bytes]]:
    """A file's lines (of its first `upto` bytes) in batches, without holding a large log in
    memory."""
    fh: BinaryIO
    with open_within(root, path) as fh:
        lines = Lines(redraws=redraws)
        for data in _chunks(fh, upto):
            yield lines.feed(data)
        yield lines.rest()
