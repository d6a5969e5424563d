"""Where the spec fixtures are, and loading one the way `trainstack validate` does."""

from __future__ import annotations

from pathlib import Path

from trainstack.spec.loader import Loader
from trainstack.spec.model import Component, Run

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "tests" / "specs"
VALID = SPECS / "valid"
INVALID = SPECS / "invalid"
COMPONENTS = ROOT / "components"


def load(path: Path, components_dir: Path | None = None) -> Component | Run:
    return Loader(components_dir).load(path)
