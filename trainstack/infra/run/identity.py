"""A deployed run's identity: a digest of what its user wrote, never of what trainstack renders.

Two renders of one run differ when trainstack changes (a template, the launcher's source, the
contract's variables) or when only the run's metadata changes (description, experiment, tags:
labels and annotations). Neither changes what the job computes, so neither may restart a
deployed job on its own: the identity covers the run's spec and its component (image, command,
version, parameters and their defaults, the code's content), its resolved parameters and
bindings (outputs placed in the artifact store included), and the namespace it runs in. Deploy
replaces the job when the identity changes, or when the user asks (docs/deploy.md, "What each
change does to a deployed run").
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainstack.spec.model import Run

# What the user wrote that says something about the run, not about what it computes; and where
# its files were (moving a run file does not change the run).
_NOT_IDENTITY = frozenset(
    {"description", "version_description", "experiment", "tags", "source", "component_ref"}
)


def run_identity(run: Run, namespace: str, rerun: str = "") -> str:
    """16 hex characters of sha256 over the run's identity (``rerun``: `--rerun`'s token)."""
    text = json.dumps(
        {"run": _data(run, run), "namespace": namespace},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )
    return hashlib.sha256((text + rerun).encode()).hexdigest()[:16]


def _data(value: Any, run: Run) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _data(getattr(value, f.name), run)
            for f in dataclasses.fields(value)
            if f.name not in _NOT_IDENTITY
        }
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): _data(v, run) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_data(v, run) for v in value]
    if isinstance(value, Path):  # a local code folder: what is in it, not where it is
        return _tree(value, run)
    return value


def _tree(code_dir: Path, run: Run) -> str:
    """A digest of the files render packs from ``code_dir`` (names, executable bits, content)."""
    from trainstack.codetree import code_files, open_code_file

    source = run.component.source
    digest = hashlib.sha256()
    for f in code_files(code_dir, source.parent if source is not None else None):
        digest.update(f"{f.rel}\0{int(f.executable)}\0{f.size}\0".encode())
        with open_code_file(f) as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()
