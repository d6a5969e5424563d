"""The one walk over a component's local code directory, shared by `render` (the ConfigMap tar)
and `run --local` (the copy into the run directory), so both see exactly the same files.

The rules (docs/render.md, "Code"):
- the code directory and everything packed from it stay inside the component's directory (the
  folder of its component.yaml): a symbolic link is followed only when its target is inside it,
  otherwise it is refused, naming the link and where it points;
- a linked directory that stays inside is followed like a real one; a link back to a directory
  being walked (a loop), a dangling link or a link that cannot be resolved is refused, named;
- only regular files are packed: a FIFO, socket or device is refused without ever being opened
  (its type comes from `lstat`/`stat`, and files are opened non-blocking and checked again);
- caches and VCS metadata (`SKIP_DIRS`, `*.pyc`) are left out by name, in both places, whatever
  they are (a `.venv` linked to an environment elsewhere is skipped, not refused).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from trainstack.errors import UserError

SKIP_DIRS = frozenset(
    {".git", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache", ".ruff_cache", "node_modules"}
)
SKIP_SUFFIXES = (".pyc", ".pyo")

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class CodeTreeError(UserError):
    """The component's code directory holds something that cannot be packed safely."""


@dataclass(frozen=True)
class CodeFile:
    rel: str  # posix path inside the code directory, as the user named it (a link's own name)
    path: Path  # the regular file to read (a link's resolved target)
    size: int
    mtime_ns: int
    executable: bool


def inside(path: Path, boundary: Path) -> bool:
    """Whether the real `path` is `boundary` or under it (both already resolved)."""
    return path == boundary or boundary in path.parents


def code_files(code_dir: Path, boundary: Path | None = None) -> tuple[CodeFile, ...]:
    """The files to pack from `code_dir`, sorted by `rel`; `boundary` (default: the code
    directory itself) is the folder no file or link may leave, the component's directory."""
    root = _real(code_dir, code_dir)
    limit = _real(boundary, boundary) if boundary is not None else root
    if not stat.S_ISDIR(os.stat(root).st_mode):
        raise CodeTreeError(f"code directory {code_dir} is not a directory")
    if not inside(root, limit):
        raise CodeTreeError(
            f"code directory {code_dir} is outside the component's directory {limit}",
            hint="keep the code inside the component's folder",
        )
    out: list[CodeFile] = []
    # An explicit stack (no recursion): each directory carries the real paths of its ancestors,
    # so a link back to one of them is a loop, not an endless walk.
    stack: list[tuple[Path, str, frozenset[Path]]] = [(root, "", frozenset({root}))]
    while stack:
        real_dir, rel_dir, ancestors = stack.pop()
        try:
            entries = sorted(os.scandir(real_dir), key=lambda e: e.name)
        except OSError as e:
            raise CodeTreeError(
                f"cannot read code directory {code_dir / rel_dir}: {e.strerror}"
            ) from None
        for entry in entries:
            if entry.name in SKIP_DIRS or entry.name.endswith(SKIP_SUFFIXES):
                continue  # by name, before anything else: a `.venv` linked elsewhere is common
            rel = f"{rel_dir}{entry.name}"
            shown = code_dir / rel
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as e:
                raise CodeTreeError(f"cannot read {shown}: {e.strerror}") from None
            path = Path(entry.path)
            if stat.S_ISLNK(st.st_mode):
                path = _real(path, shown)
                if not inside(path, limit):
                    raise CodeTreeError(
                        f"{shown} is a symbolic link to {os.readlink(entry.path)}, which is "
                        f"outside the component's directory {limit}",
                        hint="copy what it points to into the component, or remove the link; "
                        "links are followed only when they stay inside the component",
                    )
                st = os.stat(path)
            if stat.S_ISDIR(st.st_mode):
                if path in ancestors:
                    raise CodeTreeError(
                        f"{shown} is a symbolic link to a directory that contains it (a link loop)",
                        hint="remove the link",
                    )
                stack.append((path, rel + "/", ancestors | {path}))
            elif stat.S_ISREG(st.st_mode):
                out.append(
                    CodeFile(rel, path, st.st_size, st.st_mtime_ns, bool(st.st_mode & 0o111))
                )
            else:
                raise CodeTreeError(
                    f"{shown} is {_kind(st.st_mode)}, not a regular file",
                    hint="only regular files and directories can be packed; "
                    "move it out of the code directory",
                )
    return tuple(sorted(out, key=lambda f: f.rel))


@contextmanager
def open_code_file(f: CodeFile) -> Iterator[BinaryIO]:
    """`f` opened for reading; non-blocking and checked again after opening, so a file swapped
    for a FIFO or device since the walk is refused, never waited on."""
    try:
        fd = os.open(f.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise CodeTreeError(f"cannot read code file {f.rel}: {e.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise CodeTreeError(f"code file {f.rel} is {_kind(mode)}, not a regular file")
        os.set_blocking(fd, True)
        yield fh


def copy_tree(files: tuple[CodeFile, ...], target: Path) -> None:
    """Copy walked files under `target` (a local run's /ml/usercode), links as their content."""
    target.mkdir(parents=True, exist_ok=True)
    for f in files:
        dest = target / f.rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open_code_file(f) as src, dest.open("wb") as out:
            copy_sparse(src.fileno(), out.fileno())
        dest.chmod(0o755 if f.executable else 0o644)


def copy_sparse(src: int, dst: int) -> None:
    """Copy `src` into the empty `dst` keeping holes as holes: only the data ranges
    SEEK_DATA/SEEK_HOLE report are read and written, and the length is set with ftruncate, so
    a 20 GiB sparse file costs the run directory its real blocks, not 20 GiB.
    The local copy has no size rule of its own: a code bucket carries code of any size to a
    cluster, so the local run copies what the source holds. A file system without hole support
    reports the whole file as one data range (lseek(2)), which is then a plain copy."""
    size = os.fstat(src).st_size
    offset = 0
    while offset < size:
        try:
            data = os.lseek(src, offset, os.SEEK_DATA)
        except OSError as e:
            if e.errno == errno.ENXIO:
                break  # lseek(2): only a hole is left up to the end of the file
            raise
        hole = min(os.lseek(src, data, os.SEEK_HOLE), size)
        os.lseek(src, data, os.SEEK_SET)
        os.lseek(dst, data, os.SEEK_SET)
        left = hole - data
        while left > 0:
            chunk = os.read(src, min(left, 1 << 20))
            if not chunk:
                break  # truncated under us: copy what is there
            view = memoryview(chunk)
            while view:
                view = view[os.write(dst, view) :]
            left -= len(chunk)
        offset = hole
    os.ftruncate(dst, size)


def _real(path: Path, shown: Path) -> Path:
    """The resolved `path`, or one error naming the link that cannot be resolved."""
    try:
        os.stat(path)
    except FileNotFoundError:
        target = _readlink(path)
        if target is None:
            raise CodeTreeError(f"{shown} does not exist") from None
        raise CodeTreeError(
            f"{shown} is a dangling symbolic link (to {target})",
            hint="remove the link or create what it points to",
        ) from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise CodeTreeError(
                f"{shown} is a symbolic link loop", hint="remove the link"
            ) from None
        raise CodeTreeError(f"cannot read {shown}: {e.strerror}") from None
    return Path(os.path.realpath(path))


def _readlink(path: Path) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def _kind(mode: int) -> str:
    return next((word for test, word in _KINDS if test(mode)), "not a regular file")
