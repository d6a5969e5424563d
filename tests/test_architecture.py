"""The map and its detail. ARCHITECTURE.md is the page a newcomer reads in five minutes: the
layers, the flow of a run, where a change goes. The detail lives beside the code: every package
of trainstack/ has a README.md giving each of its modules' one job, so a module nobody can find
a line for is one nobody knows the job of, and a line for a module that is gone misleads.

The convention: a package's README.md names each module by its file name in backticks
(`` `fields.py` ``) and each sub-package by its folder name (`` `rules/` ``)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "trainstack"
MAX_WORDS = 800  # what a newcomer reads in five minutes

MODULE = re.compile(r"`([A-Za-z_]\w*\.py)`")
SUBPACKAGE = re.compile(r"`([A-Za-z_]\w*)/`")


def _packages() -> list[Path]:
    return sorted(p.parent for p in PACKAGE.rglob("__init__.py") if "__pycache__" not in p.parts)


def _readme(package: Path) -> str:
    readme = package / "README.md"
    return readme.read_text(encoding="utf-8") if readme.is_file() else ""


def _members(package: Path) -> tuple[set[str], set[str]]:
    modules = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    subpackages = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    return modules, subpackages


def test_architecture_md_is_a_five_minute_read() -> None:
    words = len((ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").split())
    assert words <= MAX_WORDS, (
        f"ARCHITECTURE.md has {words} words (at most {MAX_WORDS}): "
        "move the detail to the package's README.md"
    )


def test_every_package_has_a_readme() -> None:
    missing = [str(p.relative_to(ROOT)) for p in _packages() if not (p / "README.md").is_file()]
    assert not missing, "give these packages a README.md: " + ", ".join(missing)


def test_every_module_and_subpackage_is_named_by_its_package_readme() -> None:
    missing = []
    for package in _packages():
        text = _readme(package)
        modules, subpackages = _members(package)
        where = package.relative_to(ROOT)
        missing += [f"{where}: `{m}`" for m in sorted(modules - set(MODULE.findall(text)))]
        missing += [f"{where}: `{s}/`" for s in sorted(subpackages - set(SUBPACKAGE.findall(text)))]
    assert not missing, "name these in their package's README.md:\n" + "\n".join(missing)


def test_no_readme_names_a_module_its_package_lacks() -> None:
    # A bare file name in a package's README is one of that package's modules; anything
    # elsewhere is written as a path (`spec/model.py`), which tests/test_pointers.py checks.
    # Folders are not checked this way: `templates/` or `_logs/` may be named as what they are.
    stale = []
    for package in _packages():
        text = _readme(package)
        modules, _ = _members(package)
        where = package.relative_to(ROOT)
        known = modules | {"__init__.py"}  # a package's own, as where a rule is listed
        stale += [f"{where}: `{m}`" for m in sorted(set(MODULE.findall(text)) - known)]
    assert not stale, "these modules are gone; drop their lines:\n" + "\n".join(stale)


def test_the_layers_listed_are_the_contracts() -> None:
    # The Layers section restates the contract's order for the reader; the contract is the truth.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c for c in contracts if c["type"] == "layers"]
    order = [
        p.strip().removeprefix("trainstack.")
        for layer in layers["layers"]
        for p in layer.split("|")
    ]
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    lines = [
        re.findall(r"`(\w+)`", line.split(":", 1)[0])
        for line in section.splitlines()
        if re.match(r"\d+\. ", line)
    ]
    listed = [name for line in lines for name in line]
    assert listed == order, f"ARCHITECTURE.md's layers {listed} are not the contract's {order}"
    # "only the last three share a layer"
    shared = [layer for layer in layers["layers"] if "|" in layer]
    assert shared == [layers["layers"][-1]] and len(shared[0].split("|")) == len(lines[-1])


def test_the_tests_are_laid_out_like_the_code() -> None:
    """Each package of trainstack/ has its tests in the folder of its name under tests/, so the
    tests of a change are found where its code is."""
    packages = sorted(
        p.name for p in (ROOT / "trainstack").iterdir() if (p / "__init__.py").is_file()
    )
    missing = [name for name in packages if not any((ROOT / "tests" / name).glob("test_*.py"))]
    assert missing == [], f"no tests/<package>/test_*.py for: {missing}"
