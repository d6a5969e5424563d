"""``trainstack changed --since REF``: the run specs a git change affects.

A run is affected when its own file changed, or anything of the component it runs (the folder of
its ``component.yaml``: spec, code, requirements). A changed ``Pulumi.<env>.yaml`` or platform
code is reported separately (``platform``): it affects every run of that environment.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path

import yaml

from trainstack.ci import git

PLATFORM_PREFIXES = (
    "Pulumi.",
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


def _kind(path: Path) -> tuple[str | None, dict[str, object]]:
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return None, {}
    if not isinstance(doc, dict) or doc.get("apiVersion") != "trainstack.dev/v1":
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


def changed(start: Path, ref: str) -> Changes:
    root = git.toplevel(start)
    files = git.changed_files(root, ref)
    components = sorted(
        {
            posixpath.dirname(f)
            for f in git.files_at(root, "HEAD") + files
            if posixpath.basename(f) == "component.yaml"
        }
    )
    touched = {c for c in components if any(f == c or f.startswith(c + "/") for f in files)}
    runs: set[str] = set()
    for yml in sorted(root.rglob("*.yaml")):
        rel = str(yml.relative_to(root)).replace("\\", "/")
        if any(part.startswith(".") for part in Path(rel).parts):
            continue
        kind, doc = _kind(yml)
        if kind != "Run":
            continue
        if rel in files or _component_folder(root, yml, doc) in touched:
            runs.add(rel)
    return Changes(
        runs=tuple(sorted(runs)),
        components=tuple(sorted(touched)),
        platform=any(f.startswith(PLATFORM_PREFIXES) for f in files),
    )
