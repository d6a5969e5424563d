"""The few git questions CI asks, through the ``git`` CLI (argv lists, never a shell)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from trainstack.errors import ToolMissingError, UserError


def git(root: Path, *args: str, stdin: str | None = None) -> str:
    exe = shutil.which("git")
    if exe is None:
        raise ToolMissingError("git is not installed", hint="install git (apt-get install git)")
    done = subprocess.run(
        [exe, "-C", str(root), *args], input=stdin, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise UserError(
            f"git {' '.join(args[:2])}: {done.stderr.strip() or 'failed'}",
            hint="in CI, check out with fetch-depth: 0 so the base commit exists",
        )
    return done.stdout


def toplevel(start: Path) -> Path:
    return Path(git(start, "rev-parse", "--show-toplevel").strip())


def resolve(root: Path, ref: str) -> str:
    """The commit ``ref`` names (a clear error when it does not exist here)."""
    if ref.startswith("-"):
        raise UserError(f"--since {ref!r}: expected a git ref such as origin/main")
    return git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()


def changed_files(root: Path, ref: str) -> list[str]:
    """Files that differ between ``ref`` and the working tree (committed or not), plus new
    untracked ones; repository-relative, sorted."""
    commit = resolve(root, ref)
    diff = git(root, "diff", "--name-only", "--no-renames", commit, "--").splitlines()
    new = git(root, "ls-files", "--others", "--exclude-standard").splitlines()
    return sorted(set(diff) | set(new))


def tree_at(root: Path, ref: str, folder: str) -> dict[str, str]:
    """{path relative to ``folder``: blob id} of ``folder`` at ``ref``."""
    out = git(root, "ls-tree", "-r", "--full-tree", resolve(root, ref), "--", folder)
    blobs: dict[str, str] = {}
    for line in out.splitlines():
        meta, _, path = line.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == "blob":
            blobs[str(Path(path).relative_to(folder))] = parts[2]
    return blobs


def tree_now(root: Path, folder: str) -> dict[str, str]:
    """The same for the working tree: tracked and untracked (not ignored) files, as git would
    hash them."""
    files = sorted(
        set(
            git(
                root, "ls-files", "--cached", "--others", "--exclude-standard", "--", folder
            ).splitlines()
        )
    )
    files = [f for f in files if (root / f).is_file()]
    if not files:
        return {}
    ids = git(root, "hash-object", "--stdin-paths", stdin="\n".join(files) + "\n").split()
    return {str(Path(f).relative_to(folder)): i for f, i in zip(files, ids, strict=True)}


def show(root: Path, ref: str, path: str) -> str:
    return git(root, "show", f"{resolve(root, ref)}:{path}")


def files_at(root: Path, ref: str) -> list[str]:
    return git(root, "ls-tree", "-r", "--name-only", "--full-tree", resolve(root, ref)).splitlines()
