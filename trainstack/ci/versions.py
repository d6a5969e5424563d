"""``trainstack validate --since REF``: a component version that exists at REF must not change.

A version is its spec (``component.yaml``) plus its code tree (``spec.code``): the content hash
over both (git's mode and blob id of each file, so line endings, the executable bit and
symlinks count as git counts them) at REF and now.
Changed content under the same ``metadata.version`` is an error that names the changed file
and points at the version line to bump. Its runs and sweeps (``runs/``, ``sweeps/``) are not
part of it.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from trainstack import yamlsource
from trainstack.ci import git
from trainstack.errors import Diagnostic, UserError
from trainstack.spec.loader import COMPONENT_FILE

RUN_FOLDERS = ("runs", "sweeps")  # in a component folder: specs that use it, not part of it


@dataclass(frozen=True)
class Version:
    name: str
    version: str
    folder: str  # repository-relative folder of component.yaml
    code: str  # repository-relative code folder


def parse(text: str, folder: str) -> Version | None:
    try:  # the specs' own reader (yamlsource.py): bounded, duplicate keys refused
        doc = yamlsource.parse(f"{folder}/component.yaml", text).data
    except UserError:
        return None
    if not isinstance(doc, dict) or doc.get("kind") != "Component":
        return None
    meta = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    code = str(spec.get("code") or ".") if isinstance(spec, dict) else "."
    if not isinstance(meta, dict) or "name" not in meta or "version" not in meta:
        return None
    code_folder = posixpath.normpath(posixpath.join(folder, code))
    return Version(str(meta["name"]), str(meta["version"]), folder, code_folder)


def is_member(v: Version, path: str) -> bool:
    """Is the repository path ``path`` part of version ``v``: its spec, or its code tree outside
    the component's ``runs/`` and ``sweeps/`` (what a run ran, not the specs that run it)."""
    if path == posixpath.join(v.folder, COMPONENT_FILE):
        return True
    inside = v.code in (".", "") or path.startswith(v.code + "/")
    return inside and not any(
        path.startswith(posixpath.join(v.folder, users) + "/") for users in RUN_FOLDERS
    )


def _members(spec: str | None, v: Version, code_blobs: Mapping[str, str]) -> dict[str, str]:
    """{repository path: "MODE BLOB"} of what a version consists of: its spec (``spec``, its
    entry) and code tree."""
    out = {posixpath.join(v.folder, COMPONENT_FILE): spec} if spec is not None else {}
    for rel, blob in code_blobs.items():
        path = posixpath.normpath(posixpath.join(v.code, rel))
        if is_member(v, path):
            out[path] = blob
    return out


def _entry(tree: Mapping[str, str]) -> str | None:
    """The one entry of a listing of one file (None: the file is not there)."""
    return next(iter(tree.values()), None)


def digest(members: Mapping[str, str]) -> str:
    h = hashlib.sha256()
    for path, blob in sorted(members.items()):
        h.update(f"{path}\0{blob}\n".encode())
    return h.hexdigest()


def _version_line(path: Path) -> int | None:
    try:
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip().startswith("version:"):
                return i
    except OSError:
        return None
    return None


def check_versions(start: Path, ref: str, paths: Sequence[Path] = ()) -> list[Diagnostic]:
    """Every component version at ``ref`` (under ``paths``, when given) that changed unbumped."""
    root = git.toplevel(start)
    scopes = [
        str(p.resolve().relative_to(root.resolve())).replace("\\", "/")
        for p in paths
        if p.resolve().is_relative_to(root.resolve())
    ]
    if paths and not scopes:
        return []  # nothing asked for lives in this repository
    diagnostics: list[Diagnostic] = []
    for path in git.files_at(root, ref):
        if posixpath.basename(path) != COMPONENT_FILE:
            continue
        if scopes and not any(
            s in (".", "") or path == s or path.startswith(s + "/") for s in scopes
        ):
            continue
        folder = posixpath.dirname(path)
        before = parse(git.show(root, ref, path), folder)
        now_file = root / path
        if before is None or not now_file.is_file():
            continue
        now = parse(now_file.read_text(errors="replace"), folder)
        if now is None or (now.name, now.version) != (before.name, before.version):
            continue  # removed, broken (validate reports it) or a new version: fine
        # the spec file alone, not its folder: runs/ (sample data too) is not part of a version
        old = _members(
            _entry(git.tree_at(root, ref, path)), before, git.tree_at(root, ref, before.code)
        )
        new = _members(_entry(git.tree_now(root, path)), now, git.tree_now(root, now.code))
        if digest(old) == digest(new):
            continue
        changed = sorted(p for p in set(old) | set(new) if old.get(p) != new.get(p))
        diagnostics.append(
            Diagnostic(
                file=path,
                line=_version_line(now_file),
                column=1,
                path="metadata.version",
                message=(
                    f"{before.name}@{before.version} exists at {ref} and its content changed "
                    f"without a new version: {', '.join(changed[:5])}"
                    + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
                ),
                hint="bump metadata.version (and set versionDescription): a released version "
                "must stay what runs of it ran",
                code="version-not-bumped",
            )
        )
    return diagnostics
