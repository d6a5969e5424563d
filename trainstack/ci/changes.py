"""``trainstack changed --since REF``: the run specs a git change affects.

A run is affected when its own file changed, or the component version it runs (its
``component.yaml`` and code tree, ``versions.is_member``: what ``validate --since`` hashes). A
sibling run's file is not part of it, so editing one run does not redeploy the others. A changed
``Pulumi.<env>.yaml``, platform code or the job templates (``templates/``, docs/templates.md) is
reported separately (``platform``): it affects every run of that environment.

With an environment, only the runs written for it (their ``env`` tag, ``names.ENV_TAG``) are
listed; the others are reported as ``elsewhere`` with the environment they name (``None`` for a
run without the tag: a local-only run, which CI validates but never plans or deploys).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path

from trainstack import API_VERSION, yamlsource
from trainstack.ci import git, versions
from trainstack.errors import UserError
from trainstack.platformnames import ENV_TAG
from trainstack.spec.discover import spec_files
from trainstack.spec.loader import COMPONENT_FILE

PLATFORM_PREFIXES = (
    "Pulumi.",
    # the job templates (a platform's own beside its Pulumi.yaml): every run's manifests
    "templates/",
    "infra/",
    "trainstack/infra/",
    "platform/",
    "policies/",
    "trainstack/policy/",
)


@dataclass(frozen=True)
class Changes:
    runs: tuple[str, ...]  # repository-relative run files that exist now
    components: tuple[str, ...]  # component folders with changes
    platform: bool
    # with an environment: changed runs written for another one (or none), and the one they name
    elsewhere: tuple[tuple[str, str | None], ...] = ()
    # run files that existed at REF and are gone now (for the environment, with one): (file, the
    # run's name there). Their stacks stay as they are: CI reports them, a person destroys them.
    removed: tuple[tuple[str, str], ...] = ()


def _kind(path: Path) -> tuple[str | None, dict[str, object]]:
    try:
        return _kind_of(path.read_text(), str(path))
    except (OSError, UnicodeDecodeError):
        return None, {}


def _kind_of(text: str, file: str = "<spec>") -> tuple[str | None, dict[str, object]]:
    # The specs' own reader: its size cap, alias-bomb guard and duplicate-key check hold here too
    # (a spec it refuses is no spec for CI either: validate reports it).
    try:
        doc = yamlsource.parse(file, text).data
    except UserError:
        return None, {}
    if not isinstance(doc, dict) or doc.get("apiVersion") != API_VERSION:
        return None, {}
    return str(doc.get("kind")), doc


def _component_folder(root: Path, run_file: Path, doc: dict[str, object]) -> str | None:
    spec = doc.get("spec")
    ref = spec.get("component") if isinstance(spec, dict) else None
    if not isinstance(ref, str) or "@" in ref:
        return None  # name@version: resolved from a components directory, not a path
    target = (run_file.parent / ref).resolve()
    folder = target.parent if target.suffix in (".yaml", ".yml") else target
    try:
        return str(folder.relative_to(root.resolve())).replace("\\", "/")
    except ValueError:
        return None


def _touched(root: Path, folder: str, files: list[str]) -> bool:
    spec = root / folder / COMPONENT_FILE
    try:
        version = versions.parse(spec.read_text(errors="replace"), folder)
    except OSError:
        version = None
    if version is None:  # removed or unreadable: anything in its folder counts
        return any(folder in (".", "") or f.startswith(folder + "/") for f in files)
    return any(versions.is_member(version, f) for f in files)


def _env_tag(doc: dict[str, object]) -> str | None:
    meta = doc.get("metadata")
    tags = meta.get("tags") if isinstance(meta, dict) else None
    env = tags.get(ENV_TAG) if isinstance(tags, dict) else None
    return env if isinstance(env, str) else None


def _removed(
    root: Path, ref: str, files: list[str], env: str | None
) -> tuple[tuple[str, str], ...]:
    gone: list[tuple[str, str]] = []
    for rel in files:
        if not rel.endswith((".yaml", ".yml")) or (root / rel).exists() or git.is_null(ref):
            continue
        kind, doc = _kind_of(git.show(root, ref, rel))
        meta = doc.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        if kind == "Run" and isinstance(name, str) and (env is None or _env_tag(doc) == env):
            gone.append((rel, name))
    return tuple(gone)


def changed(
    start: Path, ref: str, env: str | None = None, *, all_if_platform: bool = False
) -> Changes:
    """``all_if_platform``: when the platform changed, every run counts as affected (what a pull
    request re-checks against the new environment config and policies; never what a merge
    redeploys)."""
    root = git.toplevel(start)
    files = git.changed_files(root, ref)
    platform = any(f.startswith(PLATFORM_PREFIXES) for f in files)
    components = sorted(
        {
            posixpath.dirname(f)
            for f in git.files_at(root, "HEAD") + files
            if posixpath.basename(f) == "component.yaml"
        }
    )
    touched = {c for c in components if _touched(root, c, files)}
    runs: set[str] = set()
    elsewhere: dict[str, str | None] = {}
    # the walk validate uses: .yaml and .yml, no FIFOs opened, no linked directories followed
    for yml in spec_files([root]):
        rel = yml.relative_to(root).as_posix()
        if any(part.startswith(".") for part in Path(rel).parts):
            continue
        kind, doc = _kind(yml)
        if kind != "Run":
            continue
        everything = all_if_platform and platform
        if not everything and rel not in files and _component_folder(root, yml, doc) not in touched:
            continue
        tagged = _env_tag(doc)
        if env is None or tagged == env:
            runs.add(rel)
        else:
            elsewhere[rel] = tagged
    return Changes(
        runs=tuple(sorted(runs)),
        removed=_removed(root, ref, files, env),
        components=tuple(sorted(touched)),
        platform=platform,
        elsewhere=tuple(sorted(elsewhere.items())),
    )
