"""A local run's replica logs as the console shows them: the tail of one (a large log's last
part, with a link to the whole), a search through all of it, what a running replica appended
since an offset (live follow), and the whole log or every log for download.

Only the replicas the registry records for the run are served (its `exits`), each from
`<run dir>/logs/<role>-<index>.log` and its kept rotations (trainstack.local.logcap), opened with
`open_within`: a log replaced by a link out of the run directory is refused, never followed.

Lines are shown as text: a program's terminal escape codes (colours, cursor moves) are taken
out, and a search's matches are cut out of their line so the page can mark them; the whole log
downloaded stays as written."""

from __future__ import annotations

import os
import re
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from trainstack.contract.rundir import RunDir
from trainstack.errors import NotFoundError, UserError
from trainstack.logfiles import Lines, chain
from trainstack.logview import SYSTEM_LINE, plain
from trainstack.registry.model import RunRecord
from trainstack.regularfile import describe, open_within

TAIL_LINES = 500
TAIL_BYTES = 256 << 10
MAX_MATCHES = 1000
FOLLOW_BYTES = 256 << 10  # at most this much per poll of a live log
_CHUNK = 1 << 20


@dataclass(frozen=True)
class LogTail:
    lines: tuple[str, ...]
    total_bytes: int  # of the log and its kept rotations
    truncated: bool  # the log holds more than is shown
    offset: int  # where the current file ends: the live follow starts there
    problem: str = ""  # why nothing could be read


@dataclass(frozen=True)
class Matches:
    lines: tuple[tuple[int, str], ...]  # (line number in the whole log, text)
    count: int  # matches in the whole log (more than are shown when over MAX_MATCHES)


Segment = tuple[str, bool]  # a piece of a line, and whether it is what was searched for


def is_system(line: str) -> bool:
    """A line trainstack wrote itself (`[trainstack] ...`), as `trainstack logs --system` picks."""
    return SYSTEM_LINE.match(line.encode("utf-8", errors="replace")) is not None


def keeps(system: bool | None) -> Callable[[str], bool]:
    """What `trainstack logs --system` (True), `--no-system` (False) or neither (None) keeps."""
    return lambda line: system is None or is_system(line) == system


def segments(line: str, text: str) -> tuple[Segment, ...]:
    """`line` cut around each case-insensitive occurrence of `text`, each piece marked."""
    if not text:
        return ((line, False),)
    out: list[Segment] = []
    at = 0
    for m in re.finditer(re.escape(text), line, flags=re.IGNORECASE):
        if m.start() > at:
            out.append((line[at : m.start()], False))
        out.append((m.group(), True))
        at = m.end()
    if at < len(line) or not out:
        out.append((line[at:], False))
    return tuple(out)


def replicas(record: RunRecord) -> tuple[str, ...]:
    return tuple(e.key for e in sorted(record.exits))


def log_path(record: RunRecord, replica: str) -> tuple[Path, Path]:
    """(run directory, the replica's log); NotFoundError for a replica the run does not have."""
    if record.run_dir is None or replica not in replicas(record):
        raise NotFoundError(f"run {record.id} has no log of replica {replica!r}")
    return record.run_dir, RunDir(record.run_dir).logs / f"{replica}.log"


def _text(data: bytes) -> str:
    return plain(data.decode("utf-8", errors="replace"))


def tail(record: RunRecord, replica: str) -> LogTail:
    root, path = log_path(record, replica)
    parts = chain(path)
    lines: list[str] = []
    total = 0
    offset = 0
    truncated = False
    try:
        for part in reversed(parts):  # newest first, until enough is read
            with open_within(root, part) as fh:
                size = fh.seek(0, os.SEEK_END)
                total += size
                if part == path:
                    offset = size
                if len(lines) >= TAIL_LINES:
                    truncated = True
                    continue
                start = max(0, size - TAIL_BYTES)
                fh.seek(start)
                split = Lines()
                pieces = [_text(p) for p in split.feed(fh.read(TAIL_BYTES)) + split.rest()]
            if start > 0:
                pieces, truncated = pieces[1:], True  # the first piece began before the window
            lines = pieces + lines
    except OSError as err:
        return LogTail((), total, False, 0, f"cannot read the log of {replica}: {describe(err)}")
    if len(lines) > TAIL_LINES:
        lines, truncated = lines[-TAIL_LINES:], True
    return LogTail(tuple(lines), total, truncated, offset)


def _lines(root: Path, parts: list[Path]) -> Iterator[str]:
    for part in parts:
        with open_within(root, part) as fh:
            lines = Lines()
            while data := fh.read(_CHUNK):
                yield from (_text(p) for p in lines.feed(data))
            yield from (_text(p) for p in lines.rest())


def search(
    record: RunRecord, replica: str, text: str, keep: Callable[[str], bool] | None = None
) -> Matches:
    """The lines holding `text` (case-insensitive, plain text: no pattern to go wrong) that
    `keep` keeps (None: all), the last MAX_MATCHES of them."""
    keep = keep or keeps(None)
    root, path = log_path(record, replica)
    wanted = text.casefold()
    found: list[tuple[int, str]] = []
    count = 0
    try:
        for number, line in enumerate(_lines(root, chain(path)), start=1):
            if wanted in line.casefold() and keep(line):
                count += 1
                found.append((number, line))
                if len(found) > MAX_MATCHES:
                    del found[0]
    except OSError:
        pass  # what was read is shown; the tail says why the log cannot be read
    return Matches(tuple(found), count)


def since(record: RunRecord, replica: str, offset: int) -> tuple[tuple[str, ...], int]:
    """Whole lines appended to the log after byte `offset`, and the offset after them; a log
    rotated (smaller than `offset`) is read again from its start."""
    root, path = log_path(record, replica)
    try:
        with open_within(root, path) as fh:
            size = fh.seek(0, os.SEEK_END)
            if size < offset:
                offset = 0
            fh.seek(offset)
            data = fh.read(min(FOLLOW_BYTES, size - offset))
    except OSError:
        return (), offset  # not there yet
    end = data.rfind(b"\n") + 1
    if end == 0 and len(data) < FOLLOW_BYTES:
        return (), offset  # a line still being written
    if end == 0:
        end = len(data)  # one line longer than a poll: shown in pieces
    chunk = data[:end]
    lines = _text(chunk).split("\n")
    if chunk.endswith(b"\n"):
        lines.pop()
    return tuple(lines), offset + end


def whole(record: RunRecord, replica: str) -> Iterator[bytes]:
    """The log and its kept rotations, oldest first, in chunks."""
    root, path = log_path(record, replica)
    parts = chain(path)
    if not parts:
        raise NotFoundError(f"replica {replica} of run {record.id} has no log (yet)")
    opened = []
    try:
        for p in parts:  # refused up front, before a byte is sent
            opened.append(open_within(root, p))
    except OSError as err:
        for fh in opened:
            fh.close()
        raise UserError(
            f"cannot read the log of {replica} ({p.name}): {describe(err)}",
            hint="a replica's log is a file trainstack writes in its run directory; "
            "this one was replaced",
        ) from None

    def chunks() -> Iterator[bytes]:
        for fh in opened:
            with fh:
                while data := fh.read(_CHUNK):
                    yield data

    return chunks()


def archive(record: RunRecord) -> Iterator[bytes]:
    """Every replica's whole log in one zip (`<replica>.log` each), built in a spooled file
    (memory, then disk: logs can be large); a log that cannot be read is left out."""
    buf = tempfile.SpooledTemporaryFile(max_size=16 << 20)  # noqa: SIM115 (closed by the stream)
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for replica in replicas(record):
            try:
                chunks = whole(record, replica)
            except UserError:  # NotFoundError too
                continue
            with zf.open(f"{replica}.log", "w", force_zip64=True) as out:
                for data in chunks:
                    out.write(data)
    buf.seek(0)

    def chunks_of_zip() -> Iterator[bytes]:
        with buf:
            while data := buf.read(_CHUNK):
                yield data

    return chunks_of_zip()
