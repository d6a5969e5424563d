"""A deterministic tar.gz of a local code directory: same files → same bytes → same digest.

Sorted entries, zero mtimes and owners, normalised modes, gzip without a timestamp. Which files
(and which links) are packed is `trainstack.codetree`'s walk, the same one a local run copies.
The archive is streamed: files are read in chunks and a size limit stops packing as soon as the
compressed output passes it, so a huge file is never read whole into memory.
"""

from __future__ import annotations

import hashlib
import tarfile
import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from trainstack.codetree import CodeFile, code_files, open_code_file


@dataclass(frozen=True)
class Pack:
    data: bytes
    digest: str  # first 16 hex digits of the sha256 of data


class TooLarge(Exception):
    """The compressed archive passed the limit it was packed under."""

    def __init__(self, written: int) -> None:
        super().__init__(written)
        self.written = written


class _GzipSink:
    """A write-only file for tarfile: gzips what it gets (zlib's gzip framing, mtime 0, as
    `gzip.compress(..., mtime=0)` writes it) and refuses to grow past `limit` bytes."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.parts: list[bytes] = []
        self.size = 0
        self._zlib = zlib.compressobj(level=9, wbits=31)
        self._taken = 0

    def write(self, data: bytes) -> int:
        self._taken += len(data)
        self._keep(self._zlib.compress(data))
        return len(data)

    def tell(self) -> int:  # tarfile's offsets are into the uncompressed stream
        return self._taken

    def finish(self) -> bytes:
        self._keep(self._zlib.flush())
        return b"".join(self.parts)

    def _keep(self, out: bytes) -> None:
        self.size += len(out)
        if self.limit is not None and self.size > self.limit:
            raise TooLarge(self.size)
        if out:
            self.parts.append(out)


# Source code compresses far less than this; a directory whose files add up to more than this
# many times the limit cannot fit, so it is refused before a byte is read.
MAX_RATIO = 16


def archive(root: Path, boundary: Path | None = None, limit: int | None = None) -> Pack:
    """Pack `root` (links may not leave `boundary`, the component's directory); `TooLarge`
    without reading when the files' sizes add up past `MAX_RATIO` × `limit`, else as soon as the
    compressed archive passes `limit` bytes."""
    files = code_files(root, boundary)
    raw = sum(f.size for f in files)
    if limit is not None and raw > MAX_RATIO * limit:
        raise TooLarge(raw)
    return _archive(files, limit)


@lru_cache(maxsize=64)
def _archive(files: tuple[CodeFile, ...], limit: int | None) -> Pack:
    # The walk's entries (path, size, mtime) key the cache: a changed file packs again.
    sink = _GzipSink(limit)
    with tarfile.open(fileobj=sink, mode="w", format=tarfile.PAX_FORMAT) as tar:  # type: ignore[call-overload]
        for f in files:
            info = tarfile.TarInfo(f.rel)
            info.size = f.size
            info.mode = 0o755 if f.executable else 0o644
            info.mtime = 0
            with open_code_file(f) as fh:
                tar.addfile(info, fh)
    data = sink.finish()
    return Pack(data, hashlib.sha256(data).hexdigest()[:16])
