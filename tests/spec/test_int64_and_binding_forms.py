"""Integers past 64 bits are refused by one schema rule, wherever they stand; a plain-string
binding URI gets exactly the checks of its `{uri: …}` form."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from trainstack.spec.check import validate

PROBE = Path(__file__).resolve().parents[1] / "local/fixtures/components/probe/component.yaml"
BIG = int("9" * 4000)
INT64_MAX = 2**63 - 1


def _run(tmp: Path, **spec: object) -> Path:
    doc = {
        "apiVersion": "trainstack.dev/v1",
        "kind": "Run",
        "metadata": {"name": "r"},
        "spec": {"component": str(PROBE), "parameters": {"mode": "quick"}, **spec},
    }
    path = tmp / "run.yaml"
    path.write_text(yaml.safe_dump(doc, width=10**6))
    return path


def _messages(path: Path) -> list[tuple[str, str]]:
    return [(d.path, d.message) for d in validate([path]).diagnostics]


@pytest.mark.parametrize(
    ("field", "value", "where"),
    [
        ("timeout", BIG, "spec.timeout"),
        ("timeout", 2**63, "spec.timeout"),
        ("keepAfterFinished", -(2**64), "spec.keepAfterFinished"),
        ("parameters", {"mode": "quick", "steps": 2**63}, "spec.parameters.steps"),
        ("parameters", {"mode": "quick", "seconds": -(2**63) - 1}, "spec.parameters.seconds"),
        ("resources", {"worker": {"replicas": BIG}}, "spec.resources.worker.replicas"),
        ("tags", {"k": "v"}, None),  # no integer at all: nothing to say
    ],
)
def test_integers_past_64_bits_are_one_range_error(
    field: str, value: object, where: str | None, tmp_path: Path
) -> None:
    found = [
        (p, m) for p, m in _messages(_run(tmp_path, **{field: value})) if "must fit in 64 bits" in m
    ]
    assert found == ([] if where is None else [(where, found[0][1])])
    if where is not None:
        assert "out of range" in found[0][1]
        assert len(found[0][1]) < 200, "thousands of digits are not echoed back"


def test_the_64_bit_limits_themselves_pass(tmp_path: Path) -> None:
    spec = _run(tmp_path, timeout=INT64_MAX, parameters={"mode": "quick", "steps": -(2**63)})
    assert not [m for _, m in _messages(spec) if "64 bits" in m]


def test_a_component_default_past_64_bits_is_refused(tmp_path: Path) -> None:
    comp = yaml.safe_load(PROBE.read_text())
    comp["spec"]["parameters"][1]["default"] = BIG
    comp["spec"]["code"] = str(PROBE.parent / "src")
    path = tmp_path / "component.yaml"
    path.write_text(yaml.safe_dump(comp, width=10**6))
    assert [p for p, m in _messages(path) if "64 bits" in m] == ["spec.parameters[1].default"]


BAD_URIS = [
    "not a uri",
    "OSS://bucket/x/",
    "oss://bucket/a\nb/",
    "oss://b/x/",
    "file://./a/../b/",
    "s3://bucket/x/",
    "nas:///x/",
    "://x",
    "file://",
]


@pytest.mark.parametrize("uri", BAD_URIS)
@pytest.mark.parametrize("group", ["inputs", "outputs"])
def test_plain_string_uri_gets_the_checks_of_the_uri_form(
    group: str, uri: str, tmp_path: Path
) -> None:
    channel = "data" if group == "inputs" else "result"
    (tmp_path / "plain").mkdir()
    (tmp_path / "form").mkdir()
    plain = _messages(_run(tmp_path / "plain", **{group: {channel: uri}}))
    form = _messages(_run(tmp_path / "form", **{group: {channel: {"uri": uri}}}))
    assert plain, f"{uri!r} passed as a plain string"
    assert plain == [(p.removesuffix(".uri"), m) for p, m in form]
