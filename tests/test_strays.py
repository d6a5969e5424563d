"""What the repository and the wheel hold belongs there: no run registry or other SQLite file
committed (a verb run at the repository's root writes one there, and the console leaves its
-wal/-shm beside it), and no module in the wheel that only the tests use (a test tool such as
the operator's stand-in, tests/kubedl/expand.py, lives with the tests)."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "trainstack"
# Files outside the package that load it as a program: the Pulumi programs and the CrossGuard
# pack (each directory's __main__.py).
ENTRY_FILES = sorted(ROOT.glob("*/__main__.py"))


def _tracked() -> list[Path]:
    done = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, text=True
    )
    return [ROOT / name for name in done.stdout.split("\0") if name]


def test_no_sqlite_file_is_committed() -> None:
    databases = []
    for path in _tracked():
        if path.is_file() and not path.is_symlink():
            with path.open("rb") as f:
                if f.read(16) == b"SQLite format 3\0":
                    databases.append(str(path.relative_to(ROOT)))
    assert databases == []


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str) -> set[str]:
    """Every module `path` imports (`from a import b` counts as a and a.b)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.slow  # a static check over the whole source tree
def test_every_shipped_module_is_used_by_trainstack() -> None:
    """Imported by another module of the package or an entry file, or named as a lazily loaded
    `module:attribute` (the CLI's verb table); a package counts when one of its modules does."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    used: set[str] = set()
    named: set[str] = set()
    for name, path in modules.items():
        used |= {m for m in _imports(path, name) if m != name}
        named |= set(re.findall(r"\"(trainstack(?:\.\w+)+):\w+\"", path.read_text("utf-8")))
    for entry in ENTRY_FILES:
        used |= _imports(entry, "__main__")
    used |= named
    reached = {m for m in modules if any(u == m or u.startswith(m + ".") for u in used)}
    unused = sorted(
        m for m in modules if m not in reached and m != "trainstack" and not m.endswith("__main__")
    )
    assert unused == []
