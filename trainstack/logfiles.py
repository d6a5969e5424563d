"""A replica's log and its kept rotations: `x.log`, then `x.log.1` (the newest rotation),
`x.log.2`, ... — the names a local run's logs (local/logcap) and a shipped one (the in-container
launcher's logship.py, which, standard library only, names them alike) use, and the order to
read them in; and their lines (`Lines`), read in time linear in their size."""

from __future__ import annotations

from pathlib import Path


def rotation(path: Path, n: int) -> Path:
    return path.with_name(f"{path.name}.{n}")


def chain(path: Path) -> list[Path]:
    """A log and its kept rotations that exist, oldest first (the order to read them in)."""
    older: list[Path] = []
    n = 1
    while (candidate := rotation(path, n)).is_file():
        older.append(candidate)
        n += 1
    return [*reversed(older), *([path] if path.is_file() else [])]


# A line longer than this comes in pieces: a log of one endless line (a progress bar's output
# with no line end at all) is read in bounded memory, and a search finds text within a piece.
MAX_LINE = 64 << 10


class Lines:
    """A log's lines out of its chunks, in time linear in its size (only each new chunk is
    split, never what is held so far). A line ends at `\\n`, `\\r\\n` or a lone `\\r`: tqdm and
    Keras redraw their progress bar with `\\r` and, off a terminal, never write `\\n`, so each
    redraw is a line of its own, not part of one line the size of the whole log. With
    `redraws` False only `\n` ends a line (the output shown as written, `\r` kept)."""

    def __init__(self, max_line: int = MAX_LINE, *, redraws: bool = True) -> None:
        self.max_line = max_line
        self.redraws = redraws
        self._held = bytearray()  # the line not yet ended
        self._after_cr = False  # the last chunk ended in `\r`: a `\n` next ends nothing more

    def feed(self, data: bytes) -> list[bytes]:
        """The lines `data` ends (without their line ends)."""
        if not self.redraws:
            return self._split(data)
        if self._after_cr and data[:1] == b"\n":
            data = data[1:]
        self._after_cr = False
        if not data:
            return []
        self._after_cr = data[-1:] == b"\r"
        return self._split(data.replace(b"\r\n", b"\n").replace(b"\r", b"\n"))

    def _split(self, data: bytes) -> list[bytes]:
        pieces = data.split(b"\n")
        last = pieces.pop()
        lines: list[bytes] = []
        if pieces:
            self._held += pieces[0]
            lines += self._cut(bytes(self._held))
            self._held.clear()
            for line in pieces[1:]:
                lines += self._cut(line) if len(line) > self.max_line else [line]
        self._held += last
        whole = (len(self._held) - 1) // self.max_line * self.max_line  # pieces past the limit
        if whole > 0:
            lines += self._cut(bytes(self._held[:whole]))
            del self._held[:whole]  # one cut a chunk: what is held stays under a chunk's size
        return lines

    def rest(self) -> list[bytes]:
        """The last line, not ended, once nothing more will come."""
        held = bytes(self._held)
        self._held.clear()
        return [held] if held else []

    def _cut(self, line: bytes) -> list[bytes]:
        step = self.max_line
        return [line[i : i + step] for i in range(0, len(line), step)] or [b""]
