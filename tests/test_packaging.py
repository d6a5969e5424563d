"""What the wheel ships is listed once and checked here: pyproject.toml lists the packages
(the job templates' package is mapped to the repository's top-level templates/, which package
discovery cannot express), so a package added under trainstack/ without being listed would be
missing from every installed trainstack. tests/test_wheel.py builds and installs the wheel."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _setuptools() -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    tables: dict[str, object] = config["tool"]["setuptools"]
    return tables


def test_every_package_under_trainstack_is_listed() -> None:
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "trainstack").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    listed = set(_setuptools()["packages"])  # type: ignore[call-overload]
    assert listed - {"trainstack.templates"} == found


def test_the_templates_package_is_the_top_level_templates_folder() -> None:
    tables = _setuptools()
    assert tables["package-dir"] == {"trainstack.templates": "templates"}
    assert tables["package-data"]["trainstack.templates"] == ["*.j2"]  # type: ignore[index]
    assert (ROOT / "templates" / "__init__.py").is_file()
    assert list((ROOT / "templates").glob("*.j2"))
