"""ARCHITECTURE.md names every module: a module nobody can find in the map is
one nobody knows the job of."""

from __future__ import annotations

import re
from pathlib import Path

from trainstack.cli.main import VERBS

ROOT = Path(__file__).resolve().parents[1]


def test_every_module_is_named_in_architecture_md() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    named = set(re.findall(r"`([A-Za-z0-9_./<>-]+)`", text))
    words = {w.removesuffix(".py").rsplit("/", 1)[-1] for w in named}
    missing = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "trainstack").rglob("*.py"))
        if path.name != "__init__.py"
        and "__pycache__" not in path.parts
        and path.stem not in words
        and path.parent.name != "rules"  # "one module per rule", each a rule id's module
        and not (path.parent.name == "cli" and path.stem in VERBS)  # one module per verb
    ]
    assert not missing, "name these in ARCHITECTURE.md: " + ", ".join(missing)
