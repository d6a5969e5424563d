"""`trainstack validate` as a user runs it: a real subprocess, exit codes, text and JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.spec.clirun import ROOT, trainstack
from tests.spec.specfiles import INVALID, SPECS, VALID


def test_valid_fixtures_exit_0() -> None:
    result = trainstack("validate", VALID)
    assert result.code == 0, result.err
    assert result.err == ""
    assert "17 file(s): 7 component(s), 10 run(s) valid; ok" in result.out


def test_example_components_validate() -> None:
    result = trainstack("validate", "components/")
    assert result.code == 0, result.err
    assert result.out.strip().endswith("valid; ok")


def test_all_invalid_fixtures_at_once_report_every_expected_line() -> None:
    files = sorted(p.name for p in INVALID.glob("*.yaml"))
    result = trainstack("validate", *files, cwd=INVALID)
    assert result.code == 2
    printed = set(result.err.splitlines())
    for name in files:
        expected = Path(INVALID / name).with_suffix(".expected").read_text()
        for line in expected.replace("<specs>", str(SPECS)).splitlines():
            assert line in printed, f"{name}: {line!r} not printed"
    assert f"{len(files)} file(s): 0 component(s), 0 run(s) valid" in result.out


def test_one_invalid_file_exits_2_with_its_diagnostics_on_stderr() -> None:
    result = trainstack("validate", "run-parameters.yaml", cwd=INVALID)
    assert result.code == 2
    assert result.err == (INVALID / "run-parameters.expected").read_text()
    assert result.out == "1 file(s): 0 component(s), 0 run(s) valid; 7 problem(s)\n"


def test_json_format_lists_every_diagnostic_with_its_location() -> None:
    result = trainstack(
        "validate",
        "--format",
        "json",
        "run-parameters.yaml",
        "component-unknown-keys.yaml",
        cwd=INVALID,
    )
    assert result.code == 2
    diags = json.loads(result.out)
    assert {d["file"] for d in diags} == {"run-parameters.yaml", "component-unknown-keys.yaml"}
    assert len(diags) == 7 + 8
    for d in diags:
        assert set(d) == {"file", "line", "column", "path", "message", "hint", "code"}
        assert isinstance(d["line"], int) and isinstance(d["column"], int)
    typo = next(d for d in diags if d["path"] == "spec.comand")
    assert typo == {
        "file": "component-unknown-keys.yaml",
        "line": 11,
        "column": 3,
        "path": "spec.comand",
        "message": "unknown field 'comand'",
        "hint": "did you mean 'command'?",
        "code": "unknown-key",
    }


def test_json_format_of_valid_specs_is_an_empty_list() -> None:
    result = trainstack("validate", "--format", "json", VALID / "runs" / "tf-full.yaml")
    assert result.code == 0
    assert json.loads(result.out) == []


def test_missing_path_and_empty_directory(tmp_path: Path) -> None:
    missing = trainstack("validate", tmp_path / "nope.yaml")
    assert missing.code == 2
    assert "nope.yaml: file not found" in missing.err
    empty = trainstack("validate", tmp_path)
    assert empty.code == 2
    assert "no spec files found" in empty.err


def test_directories_are_searched_and_runs_resolve_their_components(tmp_path: Path) -> None:
    result = trainstack("validate", "--components", VALID / "components", VALID / "runs")
    assert result.code == 0, result.err
    assert "10 run(s) valid; ok" in result.out


def test_an_invalid_component_is_reported_once_for_all_its_runs(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "component.yaml").write_text(
        (INVALID / "components" / "broken" / "component.yaml").read_text()
    )
    for i in range(3):
        (tmp_path / f"r{i}.yaml").write_text(
            "apiVersion: trainstack.dev/v1\nkind: Run\n"
            f"metadata: {{name: r{i}}}\nspec: {{component: c/component.yaml}}\n"
        )
    result = trainstack("validate", tmp_path)
    assert result.code == 2
    assert result.err.count("metadata.name: 'Broken' is not valid") == 1
    assert result.err.count("spec.component: component") == 3


def test_unknown_verb_suggests_one() -> None:
    result = trainstack("valdate", ROOT)
    assert result.code == 2
    assert "did you mean 'validate'?" in result.err.lower()


def test_validating_a_valid_spec_keeps_heavy_imports_off_the_path() -> None:
    # cerberus is needed only to word the errors of an invalid spec (fastcheck decides).
    script = (
        "import sys\nfrom trainstack.cli.main import main\n"
        f"main(['validate', {str(VALID / 'runs' / 'tf-full.yaml')!r}])\n"
        "heavy = {'cerberus', 'jinja2', 'rich', 'pulumi', 'torch', 'kubernetes'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
