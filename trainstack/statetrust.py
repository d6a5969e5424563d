"""Whether a file in the state home may be believed: a file a decision rests on (the plan cache's
entries, the stack index, a sweep's storage) is used only when it is a regular file owned by this
user and writable by no one else, reached from the state home through folders that are the same.

Anyone who can write such a file decides for the user: a plan cache entry with a team's
`maxPriority` raised makes `policy check` pass a run a fresh plan refuses. A file owned by
another user, a link (to anywhere), a group- or world-writable file or folder is therefore not
used, as the passphrase file readable by others is not (`deploy/settings.py`). The state home
itself is the user's choice (`--home`, `$TRAINSTACK_HOME`, a link to another disk) and is not
judged; a folder inside it that someone else could replace is.

Group-writable counts too (everyone in the group could have written it), so the folders and
files trainstack makes here are made 0700 and 0600 whatever the umask.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import stat
import sys
from pathlib import Path

from trainstack.excerpt import printable
from trainstack.regularfile import not_regular

_SAID: set[str] = set()


class UntrustedError(OSError):
    """A state file, or a folder on its way from the state home, that someone else could have
    written: not read."""


def owner() -> int:
    """The uid whose files are believed: the effective one, as the kernel judges access."""
    return os.geteuid()


def stat_problem(st: os.stat_result, *, folder: bool) -> str | None:
    """Why a file (or a folder) with this stat is not to be believed, or None."""
    if folder and not stat.S_ISDIR(st.st_mode):
        return "not a folder"
    if not folder and not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    me = owner()
    if st.st_uid != me:
        return f"owned by uid {st.st_uid}, not by you (uid {me})"
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022:
        who = " and ".join(w for w, bit in (("its group", 0o020), ("others", 0o002)) if mode & bit)
        return f"writable by {who} (mode {mode:o})"
    return None


def _parts(home: Path, path: Path) -> tuple[str, ...]:
    rel = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(home))).parts
    if not rel or rel[0] == ".." or rel == (".",):
        raise UntrustedError(errno.EPERM, "not inside the state home", str(path))
    return rel


def _step(parent: int, name: str, where: Path, *, folder: bool) -> int:
    """`name` in folder descriptor `parent`, opened without following a link and judged."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(name, flags | (os.O_DIRECTORY if folder else 0), dir_fd=parent)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            kind = "a link" if os.path.islink(where) else "not a folder"
            raise UntrustedError(errno.EPERM, kind, str(where)) from None
        raise
    try:
        st = os.fstat(fd)
        if not folder and not stat.S_ISREG(st.st_mode):  # damaged, not forged: the caller's
            raise not_regular(st.st_mode, where)
        why = stat_problem(st, folder=folder)
    except BaseException:
        os.close(fd)
        raise
    if why is not None:
        os.close(fd)
        raise UntrustedError(errno.EPERM, why, str(where))
    return fd


def _folder(home: Path, parts: tuple[str, ...]) -> int:
    """A descriptor of folder `parts` below `home`, each folder on the way judged."""
    fd = os.open(home, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    where = Path(home)
    try:
        for name in parts:
            where = where / name
            step = _step(fd, name, where, folder=True)
            os.close(fd)
            fd = step
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_trusted(home: Path, path: Path) -> int:
    """A descriptor of state file `path` below `home`, opened only when it and every folder
    between are believed (UntrustedError naming the first that is not); FileNotFoundError and
    other OSErrors as ``open`` raises them. Judged on the opened files, so a link swapped in
    between a check and the open is refused too."""
    parts = _parts(home, path)
    fd = _folder(home, parts[:-1])
    try:
        leaf = _step(fd, parts[-1], Path(path), folder=False)
    finally:
        os.close(fd)
    os.set_blocking(leaf, True)
    return leaf


def folder_problem(home: Path, folder: Path) -> str | None:
    """Why folder `folder` below `home` (or one between) is not the user's alone, or None."""
    try:
        os.close(_folder(home, _parts(home, folder)))
    except UntrustedError as err:
        return f"{err.filename}: {err.strerror}"
    except OSError:  # absent or unreadable: whoever writes there finds out
        return None
    return None


def read_trusted(home: Path, path: Path, limit: int | None = None) -> bytes:
    """State file `path`, read only when `open_trusted` believes it: whole, or at most
    ``limit + 1`` bytes (a longer file is the caller's to refuse)."""
    fd = open_trusted(home, path)
    with os.fdopen(fd, "rb") as fh:
        return fh.read() if limit is None else fh.read(limit + 1)


def path_problem(home: Path, path: Path) -> str | None:
    """Why state file `path` below `home`, which another library opens by its name (SQLite), is
    not to be believed, or None (also when it does not exist yet). Once every folder on the way
    is the user's alone, no one else can swap the file between this check and that open."""
    try:
        os.close(open_trusted(home, path))
    except UntrustedError as err:
        return f"{err.filename}: {err.strerror}"
    except FileNotFoundError:
        return None
    except OSError:  # unreadable for another reason: the caller's own open reports it
        return None
    return None


def make_folders(home: Path, folder: Path) -> None:
    """`folder` below `home` and those between, each made 0700 (a group-writable umask would
    leave them untrusted); those that exist are left as they are."""
    Path(home).mkdir(parents=True, exist_ok=True)
    where = Path(home)
    for name in _parts(home, folder):
        where = where / name
        with contextlib.suppress(FileExistsError):
            where.mkdir(mode=0o700)


def say_once(what: str, path: Path, err: OSError) -> None:
    """One line on stderr, once per file and process: why `what` at `path` was not used (its
    own fault or a folder's on the way, `err.filename`): CI logs get one line, not one per run
    planned."""
    if str(path) in _SAID:
        return
    _SAID.add(str(path))
    culprit = "" if str(err.filename) == str(path) else f"{err.filename} is "
    fix = (
        f"chmod go-w {shlex.quote(str(err.filename))}"
        if str(err.strerror).startswith("writable by")
        else "remove it if you did not put it there"
    )
    print(
        f"trainstack: not using {what} {printable(str(path))}: {printable(culprit)}"
        f"{err.strerror}; only files of yours that no one else can write are used "
        f"({printable(fix)})",
        file=sys.stderr,
    )
