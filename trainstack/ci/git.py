"""The few git questions CI asks, through the ``git`` CLI (argv lists, never a shell).

Every list of paths is read NUL-separated (``-z``): without it git quotes a name with non-ASCII
bytes, a quote or a control character (``core.quotePath``), and such a file would silently drop
out of the version check and of ``changed``. Entries are ``{path: "MODE BLOB"}`` as a tree records
them, so the executable bit and a symlink's target count as git counts them.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import stat
import subprocess
from pathlib import Path

from trainstack.errors import ToolMissingError, UserError
from trainstack.excerpt import excerpt, printable

# paths per `git hash-object` call: far below any ARG_MAX, few calls for a large tree
_HASH_BATCH = 500


class GitFailed(UserError):
    """A git command that exited non-zero, for a caller that words it better."""


# git 2.35.2+ refuses a repository owned by another user (CVE-2022-24765): the checkout a CI
# container runs in as root is the runner's.
_DUBIOUS = re.compile(r"dubious ownership in repository at '(?P<path>[^'\n]*)'")


def run(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    exe = shutil.which("git")
    if exe is None:
        raise ToolMissingError("git is not installed", hint="install git (apt-get install git)")
    done = subprocess.run(
        [exe, "-C", str(root), *args], input=stdin, capture_output=True, check=False
    )
    if done.returncode != 0:
        told = done.stderr.decode("utf-8", "replace").strip()
        dubious = _DUBIOUS.search(told)
        if dubious:
            path = dubious.group("path") or str(root)
            raise UserError(
                f"git refuses the repository at {printable(path)}: it is owned by another user "
                "than the one running git (git: detected dubious ownership)",
                hint="if you trust it (a CI container's checkout is the runner's), run "
                f"`git config --global --add safe.directory {shlex.quote(path)}` first",
            )
        raise GitFailed(
            f"git {' '.join(args[:2])}: {printable(told) or 'failed'}",
            hint="in CI, check out with fetch-depth: 0 so the base commit exists",
        )
    return done.stdout


def git(root: Path, *args: str, stdin: bytes | None = None) -> str:
    return run(root, *args, stdin=stdin).decode("utf-8", "replace")


def _paths(out: bytes) -> list[str]:
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def toplevel(start: Path) -> Path:
    try:
        out = run(start, "rev-parse", "--show-toplevel")
    except GitFailed:
        raise UserError(
            f"{start}: not inside a git repository (--since compares with a git ref)",
            hint="run it in the repository's checkout",
        ) from None
    return Path(os.fsdecode(out.rstrip(b"\n")))


def is_null(ref: str) -> bool:
    """The all-zero object id: GitHub's ``github.event.before`` on a push that created the
    branch. "Since nothing": every file is new, no version existed."""
    return len(ref) in (40, 64) and set(ref) == {"0"}


def resolve(root: Path, ref: str) -> str:
    """The commit ``ref`` names (a clear error when it does not exist here)."""
    if ref.startswith("-"):
        raise UserError(f"--since {ref!r}: expected a git ref such as origin/main")
    try:
        return git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    except GitFailed:  # --quiet: git says nothing, only that it failed
        raise UserError(
            f"--since {excerpt(ref)}: no such commit in this repository (an unknown branch, "
            "tag or commit, or history this checkout has not fetched)",
            hint="fetch it (`git fetch origin`; in CI, check out with fetch-depth: 0) or name a "
            "ref that exists here, such as origin/main (`git branch -a` lists them)",
        ) from None


def changed_files(root: Path, ref: str) -> list[str]:
    """Files that differ between ``ref`` and the working tree (committed or not), plus new
    untracked ones; repository-relative, sorted. Since the null id: every file there is."""
    if is_null(ref):
        return sorted(
            set(_paths(run(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")))
        )
    commit = resolve(root, ref)
    diff = _paths(run(root, "diff", "--name-only", "-z", "--no-renames", commit, "--"))
    new = _paths(run(root, "ls-files", "-z", "--others", "--exclude-standard"))
    return sorted(set(diff) | set(new))


def tree_at(root: Path, ref: str, folder: str) -> dict[str, str]:
    """{path relative to ``folder``: "MODE BLOB"} of the files in ``folder`` at ``ref``."""
    out = run(root, "ls-tree", "-r", "-z", "--full-tree", resolve(root, ref), "--", folder)
    entries: dict[str, str] = {}
    for record in out.split(b"\0"):
        meta, _, path = record.partition(b"\t")
        parts = meta.decode("ascii", "replace").split()
        if len(parts) == 3 and parts[1] == "blob":  # submodules (commit entries) are not code
            rel = os.path.relpath(os.fsdecode(path), folder)
            entries[Path(rel).as_posix()] = f"{parts[0]} {parts[2]}"
    return entries


def tree_now(root: Path, folder: str) -> dict[str, str]:
    """The same for the working tree: tracked and untracked (not ignored) files, as ``git add``
    would record them (content through git's own filters; a link as its target's text)."""
    listed = sorted(
        set(
            _paths(
                run(
                    root,
                    "ls-files",
                    "-z",
                    "--cached",
                    "--others",
                    "--exclude-standard",
                    "--",
                    folder,
                )
            )
        )
    )
    # None: the bit on disk counts; otherwise the index's mode (new files: not executable)
    index_modes = None if _file_mode_trusted(root) else _index_modes(root, folder)
    entries: dict[str, str] = {}
    regular: list[tuple[str, str, str]] = []  # (repository path, relative path, mode)
    for path in listed:
        try:
            st = (root / path).lstat()
        except OSError:
            continue  # deleted in the working tree
        rel = Path(os.path.relpath(path, folder)).as_posix()
        if stat.S_ISLNK(st.st_mode):
            # git stores a link as a blob of its target's text (hash-object would follow it)
            target = os.fsencode(os.readlink(root / path))
            entries[rel] = f"120000 {git(root, 'hash-object', '--stdin', stdin=target).strip()}"
        elif stat.S_ISREG(st.st_mode):
            if index_modes is None:
                mode = "100755" if st.st_mode & stat.S_IXUSR else "100644"
            else:
                mode = index_modes.get(path, "100644")
            regular.append((path, rel, mode))
    for i in range(0, len(regular), _HASH_BATCH):
        batch = regular[i : i + _HASH_BATCH]
        ids = git(root, "hash-object", "--", *(path for path, _, _ in batch)).split()
        for (_, rel, mode), blob in zip(batch, ids, strict=True):
            entries[rel] = f"{mode} {blob}"
    return entries


@functools.cache
def _file_mode_trusted(root: Path) -> bool:
    """git's own rule: with ``core.fileMode`` false the executable bit on disk means nothing,
    and a tracked file keeps the mode its index entry has."""
    try:
        value = git(root, "config", "--type=bool", "core.fileMode").strip()
    except UserError:
        return True  # unset
    return value != "false"


def _index_modes(root: Path, folder: str) -> dict[str, str]:
    out = run(root, "ls-files", "-s", "-z", "--", folder)
    modes: dict[str, str] = {}
    for record in out.split(b"\0"):
        meta, _, path = record.partition(b"\t")
        parts = meta.decode("ascii", "replace").split()
        if parts and parts[0] in ("100644", "100755"):
            modes[os.fsdecode(path)] = parts[0]
    return modes


def show(root: Path, ref: str, path: str) -> str:
    return git(root, "show", f"{resolve(root, ref)}:{path}")


def files_at(root: Path, ref: str) -> list[str]:
    if is_null(ref):
        return []
    return _paths(
        run(root, "ls-tree", "-r", "-z", "--name-only", "--full-tree", resolve(root, ref))
    )
