"""Read what replicas append to their log files, incrementally and in large chunks.

Used by the live terminal view and by `trainstack logs --follow`. A reader that falls far behind
(a replica writing hundreds of MB) skips ahead instead of slowing anything down: the file on disk
always has everything.

A log is opened as any file of a run directory is (trainstack.regularfile.open_within): a replica
that replaces its log with a link out of the run directory (to `/proc/self/environ`, say) gets
nothing shown, instead of the reader's environment.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from trainstack.logfiles import MAX_LINE, Lines
from trainstack.regularfile import open_within

CHUNK = 1 << 20


class Tail:
    def __init__(self, path: Path, *, root: Path, start: int = 0, redraws: bool = True) -> None:
        """Lines from byte `start` on (where what was already shown of the file ends)."""
        self.path = path
        self.root = root
        self.offset = start
        self.redraws = redraws  # whether a lone `\r` ends a line (trainstack.logfiles.Lines)
        self._lines = Lines(redraws=redraws)
        self._fh: BinaryIO | None = None

    def poll(self, budget: int = CHUNK, skip_beyond: int | None = None) -> tuple[list[bytes], int]:
        """Complete new lines (without newline), reading at most `budget` bytes; and how many
        bytes were skipped because more than `skip_beyond` were waiting."""
        fh = self._open()
        if fh is None:
            return [], 0
        size = os.fstat(fh.fileno()).st_size
        if size < self.offset:  # truncated or replaced: start over
            self.offset, self._lines = 0, Lines(redraws=self.redraws)
        skipped = 0
        if skip_beyond is not None and size - self.offset > skip_beyond:
            resume_at = size - budget
            skipped = resume_at - self.offset
            self.offset, self._lines = resume_at, Lines(redraws=self.redraws)
            fh.seek(self.offset)
            # Drop the line we landed in the middle of.
            head = fh.read(budget)
            cut = head.find(b"\n") + 1
            self.offset += cut
            skipped += cut
        fh.seek(self.offset)
        data = fh.read(min(budget, size - self.offset))
        self.offset += len(data)
        if not data:
            return [], skipped
        return self._lines.feed(data), skipped

    def rest(self) -> list[bytes]:
        """An unterminated last line, once the writer is known to be done."""
        return self._lines.rest()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def _open(self) -> BinaryIO | None:
        if self._fh is None:
            try:
                self._fh = open_within(self.root, self.path)  # kept open across polls
            except OSError:  # not there yet, or not a file of the run's (a link out, a FIFO)
                return None
        return self._fh


def last_lines(path: Path, count: int, *, root: Path, end: int | None = None) -> list[bytes]:
    """The last `count` lines of a file below run directory `root` (of its first `end` bytes,
    if given), reading backwards from its end (big logs stay cheap)."""
    if count <= 0:
        return []
    chunks: list[bytes] = []
    ends = 0  # line ends read so far; a `\r\n` split between two chunks counts twice
    with open_within(root, path) as fh:
        pos = fh.seek(0, os.SEEK_END)
        pos = pos if end is None else min(pos, end)
        # Past `count` pieces of the longest line, what lies before cannot be among the last.
        window = pos - count * MAX_LINE - CHUNK
        while pos > max(0, window) and ends <= count + len(chunks):
            step = min(CHUNK, pos)
            pos -= step
            fh.seek(pos)
            chunks.append(fh.read(step))
            data = chunks[-1]
            ends += data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
    lines = Lines()
    found = lines.feed(b"".join(reversed(chunks))) + lines.rest()
    return found[-count:]
