"""Shared helpers for the spec tests: where the fixtures are and how to write small specs."""

from __future__ import annotations

import textwrap
from pathlib import Path

from trainstack.errors import Diagnostic, SpecError
from trainstack.spec.loader import Loader
from trainstack.spec.model import Component, Run

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "tests" / "specs"
VALID = SPECS / "valid"
INVALID = SPECS / "invalid"
COMPONENTS = ROOT / "components"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def load(path: Path, components_dir: Path | None = None) -> Component | Run:
    return Loader(components_dir).load(path)


def diagnostics(path: Path, components_dir: Path | None = None) -> list[Diagnostic]:
    """The diagnostics loading `path` raises; fails the test if it loads."""
    try:
        spec = Loader(components_dir).load(path)
    except SpecError as err:
        return err.diagnostics()
    raise AssertionError(f"{path} loaded without diagnostics: {spec!r}")


def messages(path: Path, components_dir: Path | None = None) -> list[tuple[str, str]]:
    """(field path, message) of each diagnostic, for concise assertions."""
    return [(d.path, d.message) for d in diagnostics(path, components_dir)]
