"""Every diagnostic code is documented in docs/diagnostics.md, and `validate --format json` gives
each diagnostic's code."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from tests.spec.clirun import trainstack

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "diagnostics.md"


def _source_codes() -> dict[str, str]:
    """code → where it is first used: `code="..."` arguments, and string defaults of parameters
    and fields named `code` (Diagnostic's fallback, the YAML reader's)."""
    codes: dict[str, str] = {}
    for path in sorted((ROOT / "trainstack").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = str(path.relative_to(ROOT))
        for node in ast.walk(tree):
            found: list[ast.expr] = []
            if isinstance(node, ast.Call):
                found += [k.value for k in node.keywords if k.arg == "code"]
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                positional = [*args.posonlyargs, *args.args]
                found += [
                    d
                    for a, d in zip(
                        positional[len(positional) - len(args.defaults) :],
                        args.defaults,
                        strict=True,
                    )
                    if a.arg == "code"
                ]
                found += [
                    d
                    for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                    if a.arg == "code" and d is not None
                ]
            elif (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.target.id == "code"
                and node.value is not None
            ):
                found.append(node.value)
            for value in found:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    codes.setdefault(value.value, f"{where}:{value.lineno}")
    return codes


def _documented() -> set[str]:
    return set(re.findall(r"^\| `([a-z0-9-]+)` \|", DOC.read_text(encoding="utf-8"), re.M))


@pytest.mark.slow  # a static check over the whole source tree
def test_the_source_scan_finds_codes() -> None:
    codes = _source_codes()
    # The fallback, the YAML reader's default and codes given as keyword arguments.
    assert {"invalid", "yaml", "unknown-key", "metrics", "duplicate-key"} <= set(codes)


@pytest.mark.slow  # a static check over the whole source tree
def test_every_code_in_the_source_is_documented() -> None:
    missing = {c: at for c, at in _source_codes().items() if c not in _documented()}
    assert not missing, f"add these codes to docs/diagnostics.md: {missing}"


@pytest.mark.slow  # a static check over the whole source tree
def test_every_documented_code_is_used() -> None:
    stale = _documented() - set(_source_codes())
    assert not stale, f"docs/diagnostics.md lists codes nothing uses: {sorted(stale)}"


def test_validate_json_gives_each_diagnostic_code(tmp_path: Path) -> None:
    spec = tmp_path / "run.yaml"
    spec.write_text(
        "apiVersion: trainstack.dev/v1\nkind: Runn\nmetadata: {name: x}\n", encoding="utf-8"
    )
    result = trainstack("validate", "--format", "json", spec)
    assert result.code == 2
    diags = json.loads(result.out)
    assert diags and all(d["code"] in _documented() for d in diags), diags
    assert "kind" in {d["code"] for d in diags}
