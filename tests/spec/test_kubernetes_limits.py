"""What Kubernetes (or Linux's execve) refuses is refused at validation, each with its
limit: cpu .nan/.inf, a cpu past 2^63-1, a timeout past int64 seconds, a component
name that becomes a label value over 63 characters, parameter values too long to reach a
replica's environment."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.clirunner import Cli
from trainstack.spec.check import validate

PROBE = Path(__file__).resolve().parents[1] / "local/fixtures/components/probe/component.yaml"
DIGITS_500 = "9" * 500


def _run(tmp: Path, text: str) -> Path:
    path = tmp / "run.yaml"
    params = "" if "parameters:" in text else "  parameters: {mode: quick}\n"
    path.write_text(
        "apiVersion: trainstack.dev/v1\nkind: Run\nmetadata: {name: r}\n"
        f"spec:\n  component: {PROBE}\n{params}{text}\n"
    )
    return path


def _component(tmp: Path, name: str) -> Path:
    comp = yaml.safe_load(PROBE.read_text())
    comp["metadata"]["name"] = name
    (tmp / "src").mkdir(exist_ok=True)
    (tmp / "src" / "probe.py").write_text("")
    comp["spec"]["code"] = "./src"
    path = tmp / "component.yaml"
    path.write_text(yaml.safe_dump(comp, width=10**6))
    return path


# (spec text, field path, a piece of the message, diagnostic code)
CASES: dict[str, tuple[str, str, str, str]] = {
    "cpu-nan": (
        "  resources: {worker: {cpu: .nan}}",
        "spec.resources.worker.cpu",
        "must be a finite number",
        "quantity",
    ),
    "cpu-inf": (
        "  resources: {worker: {cpu: .inf}}",
        "spec.resources.worker.cpu",
        "must be a finite number",
        "quantity",
    ),
    "memory-minus-inf": (
        "  resources: {worker: {memory: -.inf}}",
        "spec.resources.worker.memory",
        "must be a finite number",
        "quantity",
    ),
    "cpu-500-digits-text": (
        f'  resources: {{worker: {{cpu: "{DIGITS_500}"}}}}',
        "spec.resources.worker.cpu",
        "2^63-1",
        "quantity",
    ),
    # A number (not text): the schema's one 64-bit rule answers (it was an OverflowError).
    "cpu-500-digits-number": (
        f"  resources: {{worker: {{cpu: {DIGITS_500}}}}}",
        "spec.resources.worker.cpu",
        "must fit in 64 bits",
        "range",
    ),
    "memory-past-int64": (
        "  resources: {worker: {memory: 9Ei}}",
        "spec.resources.worker.memory",
        "2^63-1",
        "quantity",
    ),
    "timeout-past-int64-seconds": (
        "  timeout: 9999999999999999999s",
        "spec.timeout",
        "9,223,372,036,854,775,807",
        "timeout",
    ),
    "timeout-past-int64-in-hours": (
        "  timeout: 300000000000000000h",
        "spec.timeout",
        "9,223,372,036,854,775,807",
        "timeout",
    ),
    "keep-past-int32-seconds": (
        "  keepAfterFinished: 2147483648s",
        "spec.keepAfterFinished",
        "2,147,483,647",
        "timeout",
    ),
    "one-megabyte-parameter": (
        "  parameters: {mode: quick, message: " + "x" * 1_000_000 + "}",
        "spec.parameters",
        "65,536",
        "limit",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_refused_at_validation_with_its_limit(case: str, tmp_path: Path) -> None:
    text, where, said, code = CASES[case]
    diags = validate([_run(tmp_path, text)]).diagnostics
    found = [d for d in diags if d.path == where]
    assert len(found) == 1, diags
    assert said in found[0].message, found[0].message
    assert found[0].code == code
    assert len(found[0].message) < 300, "the value is not echoed back"


def test_the_limits_themselves_pass(tmp_path: Path) -> None:
    ok = _run(
        tmp_path,
        "  resources: {worker: {cpu: 9223372036854775807, memory: 7Ei}}\n"
        "  timeout: 9223372036854775807s\n  keepAfterFinished: 2147483647s",
    )
    assert validate([ok]).diagnostics == []


def test_a_component_name_over_63_characters_is_refused(tmp_path: Path) -> None:
    """The component's name is a label value (trainstack.dev/component): at most 63."""
    diags = validate([_component(tmp_path, "a" * 64)]).diagnostics
    assert [d.path for d in diags] == ["metadata.name"]
    assert "1-63" in diags[0].message
    assert validate([_component(tmp_path, "a" * 63)]).diagnostics == []


def test_cli_says_one_error_and_no_traceback(tmp_path: Path) -> None:
    for case in ("cpu-500-digits-number", "one-megabyte-parameter"):
        done = Cli().invoke("validate", _run(tmp_path, CASES[case][0]))
        assert done.code == 2, done.output
        assert "Traceback" not in done.output
        assert CASES[case][2] in done.output
