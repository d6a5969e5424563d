"""mypy skips most of the big generated SDKs (pyproject.toml says why); the parts trainstack
names must still be followed, or its calls into them would be checked against Any.

The uses are found in the code's syntax tree and resolved to the module that defines each name
(``alicloud.cs`` -> ``pulumi_alicloud.cs``, ``k8s.Provider`` -> ``pulumi_kubernetes.provider``),
then matched against the overrides as mypy matches them: a concrete name beats a pattern, and a
longer pattern beats a shorter one.
"""

from __future__ import annotations

import ast
import importlib
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
SDKS = ("pulumi_alicloud", "pulumi_kubernetes", "kubernetes")


def _follow_imports() -> dict[str, str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for section in config["tool"]["mypy"].get("overrides", []):
        if "follow_imports" in section:
            modules = section["module"]
            for pattern in [modules] if isinstance(modules, str) else modules:
                found[pattern] = section["follow_imports"]
    return found


def _setting(module: str, overrides: dict[str, str]) -> str:
    if module in overrides:
        return overrides[module]
    best, setting = "", "normal"
    for pattern, value in overrides.items():
        if not pattern.endswith(".*"):
            continue
        stem = pattern[:-2]
        if (module == stem or module.startswith(stem + ".")) and len(stem) > len(best):
            best, setting = stem, value
    return setting


def _defining_module(owner: object, attr: str) -> str:
    value = getattr(owner, attr)
    if isinstance(value, ModuleType):
        return value.__name__
    return str(getattr(value, "__module__", None) or getattr(owner, "__name__", ""))


def _sdk(module: str) -> bool:
    return module.split(".")[0] in SDKS


def sdk_uses() -> dict[str, set[str]]:
    """{defining module: {"file:line", ...}} for every SDK name trainstack's code uses."""
    uses: dict[str, set[str]] = {}
    for path in sorted((ROOT / "trainstack").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases: dict[str, object] = {}  # a local name bound to an SDK module
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if _sdk(a.name):
                        aliases[a.asname or a.name.split(".")[0]] = importlib.import_module(
                            a.name if a.asname else a.name.split(".")[0]
                        )
            elif isinstance(node, ast.ImportFrom) and node.module and _sdk(node.module):
                owner = importlib.import_module(node.module)
                for a in node.names:
                    target = _defining_module(owner, a.name)
                    uses.setdefault(target, set()).add(f"{path.name}:{node.lineno}")
                    if isinstance(getattr(owner, a.name), ModuleType):
                        aliases[a.asname or a.name] = getattr(owner, a.name)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
            ):
                target = _defining_module(aliases[node.value.id], node.attr)
                uses.setdefault(target, set()).add(f"{path.name}:{node.lineno}")
    return uses


# importing an SDK's groups runs their deprecation notices
@pytest.mark.slow  # a static check over the whole source tree
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_every_sdk_module_trainstack_names_is_followed_by_mypy() -> None:
    uses = sdk_uses()
    # the scan sees the code's real uses (a scan that finds nothing would pass anything)
    assert {"pulumi_alicloud.cs", "pulumi_kubernetes.core", "pulumi_kubernetes.provider"} <= set(
        uses
    ), sorted(uses)
    overrides = _follow_imports()
    skipped = {m: sorted(w) for m, w in uses.items() if _setting(m, overrides) == "skip"}
    assert not skipped, (
        "mypy would read these as Any: add them to the follow_imports = normal list in "
        f"pyproject.toml: {skipped}"
    )


def test_the_matching_is_mypys() -> None:
    overrides = {"a.*": "skip", "a.b.*": "normal", "a": "normal"}
    assert _setting("a", overrides) == "normal"  # the concrete name beats "a.*"
    assert _setting("a.c", overrides) == "skip"
    assert _setting("a.b", overrides) == "normal"  # "a.b.*" matches a.b itself
    assert _setting("a.b.c", overrides) == "normal"
    assert _setting("ab", overrides) == "normal"  # "a.*" is not a prefix match on "ab"
    assert _setting("torch.nn", _follow_imports()) == "skip"
