"""A failed run whose replicas died of a missing Python module: which module, and how the
component says to install it — said once in the summary, instead of one traceback per replica
(a TensorFlow component run where TensorFlow is not installed fails in every replica alike)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from trainstack.logtail import last_lines
from trainstack.regularfile import open_within

# CPython's message (Python/import.c, Lib/importlib/_bootstrap.py): No module named 'x.y'
_MISSING = re.compile(rb"ModuleNotFoundError: No module named '([A-Za-z0-9_.]{1,200})'")
TAIL_LINES = 60  # a traceback's last line is near the end of a replica's log
README_BYTES = 64 * 1024


@dataclass(frozen=True)
class MissingModule:
    module: str  # the top-level package: what pip installs
    replicas: tuple[str, ...]  # role-index of each replica that died of it
    hint: str


def missing_modules(
    logs: Iterable[Path], root: Path, component_dir: Path | None
) -> list[MissingModule]:
    """What the replica logs (``<role>-<index>.log`` under run directory ``root``) say was
    missing, grouped by module."""
    by_module: dict[str, list[str]] = {}
    for log in sorted(logs):
        try:
            tail = last_lines(log, TAIL_LINES, root=root)
        except OSError:
            continue
        for line in reversed(tail):
            found = _MISSING.search(line)
            if found:
                top = found.group(1).decode("ascii").split(".")[0]
                by_module.setdefault(top, []).append(log.stem)
                break
    return [
        MissingModule(m, tuple(sorted(r)), install_hint(m, component_dir))
        for m, r in sorted(by_module.items())
    ]


def install_hint(module: str, component_dir: Path | None) -> str:
    """The component's own words first: a README line that installs the module (or the first
    that installs anything); then its requirements file; then plain pip."""
    if component_dir is not None:
        readme = component_dir / "README.md"
        lines = _read_lines(readme, component_dir)
        installs = [(i, t) for i, t in enumerate(lines, 1) if "pip install" in t]
        naming = [(i, t) for i, t in installs if module.lower() in t.lower()]
        for line_no, text in naming or installs:
            command = text.split(" #", 1)[0].strip()  # a shell comment after it is not the hint
            return f"{command}  ({readme}, line {line_no})"
    return (
        f"install it into the Python that runs trainstack (pip install {module}), or list it in "
        "the component's requirements.txt (installed before the command, unless --no-install)"
    )


def _read_lines(path: Path, root: Path) -> list[str]:
    try:
        with open_within(root, path) as fh:
            data = fh.read(README_BYTES)
    except OSError:
        return []
    return data.decode("utf-8", errors="replace").splitlines()
