"""The fixture sets: every valid spec loads to the model, every invalid spec gives exactly the
diagnostics in its `.expected` file.

Regenerate the expected files after an intended change in wording with
`.venv/bin/python -m pytest tests/spec/test_fixtures.py --update-golden` (or with
TRAINSTACK_UPDATE_GOLDEN=1), then review
the diff like any other change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.spec.specfiles import INVALID, SPECS, VALID, load
from trainstack.errors import SpecError
from trainstack.spec.discover import spec_files
from trainstack.spec.loader import Loader
from trainstack.spec.model import Component, JobType, ParamType, Run
from trainstack.spec.schema import SCHEMAS

VALID_FILES = sorted(spec_files([VALID]))
INVALID_FILES = sorted(INVALID.glob("*.yaml"))


def _id(path: Path) -> str:
    return str(path.relative_to(SPECS))


# -- valid --------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", VALID_FILES, ids=_id)
def test_valid_fixture_loads_to_the_model(path: Path) -> None:
    spec = load(path)
    kind = yaml.safe_load(path.read_text())["kind"]
    assert type(spec).__name__ == kind
    assert spec.source == path.resolve()


def _loaded() -> tuple[list[Component], list[Run]]:
    loader = Loader()
    specs = [loader.load(p) for p in VALID_FILES]
    components = [s for s in specs if isinstance(s, Component)]
    return components, [s for s in specs if isinstance(s, Run)]


def _schema_paths(schema: dict[str, Any], prefix: str = "") -> set[str]:
    """Every field the cerberus schema names, as dotted paths (list items and map values add
    no segment)."""
    out: set[str] = set()
    for key, rule in schema.items():
        path = f"{prefix}.{key}" if prefix else key
        out.add(path)
        out |= _rule_paths(rule, path)
    return out


def _rule_paths(rule: dict[str, Any], path: str) -> set[str]:
    out: set[str] = set()
    inner = rule.get("schema")
    if isinstance(inner, dict):
        if rule.get("type") == "list" or inner.get("type") == "dict":
            out |= _rule_paths(inner, path)
        else:
            out |= _schema_paths(inner, path)
    values = rule.get("valuesrules")
    if isinstance(values, dict):
        out |= _rule_paths(values, path)
    return out


def _data_paths(data: Any, schema: dict[str, Any], prefix: str = "") -> set[str]:
    out: set[str] = set()
    if not isinstance(data, dict):
        return out
    for key, value in data.items():
        if key not in schema:
            continue
        path = f"{prefix}.{key}" if prefix else key
        out.add(path)
        out |= _data_rule_paths(value, schema[key], path)
    return out


def _data_rule_paths(value: Any, rule: dict[str, Any], path: str) -> set[str]:
    out: set[str] = set()
    inner = rule.get("schema")
    if isinstance(inner, dict) and isinstance(value, list):
        for item in value:
            out |= _data_rule_paths(item, inner, path)
    elif isinstance(inner, dict) and isinstance(value, dict):
        out |= _data_paths(value, inner, path)
    values = rule.get("valuesrules")
    if isinstance(values, dict) and isinstance(value, dict):
        for item in value.values():
            out |= _data_rule_paths(item, values, path)
    return out


@pytest.mark.parametrize("kind", ["Component", "Run"])
def test_valid_fixtures_use_every_field_of_the_schema(kind: str) -> None:
    schema = SCHEMAS[kind]
    used: set[str] = set()
    for path in VALID_FILES:
        data = yaml.safe_load(path.read_text())
        if data["kind"] == kind:
            used |= _data_paths(data, schema)
    assert _schema_paths(schema) - used == set()


def test_valid_fixtures_cover_job_types_parameter_types_and_binding_forms() -> None:
    components, runs = _loaded()
    assert {c.job_type for c in components} == set(JobType)
    assert {r.job_type for r in runs} == set(JobType)
    assert {c.code.kind for c in components if c.code} == {"local", "oss", "git"}
    params = [p for c in components for p in c.parameters]
    for ptype in ParamType:
        assert any(p.type is ptype and p.default is not None for p in params), ptype
    for ptype in (ParamType.INT, ParamType.FLOAT, ParamType.STRING):
        assert any(p.type is ptype and p.range for p in params), ptype
        assert any(p.type is ptype and p.enum for p in params), ptype
    bindings = [b for r in runs for b in [*r.inputs.values(), *r.outputs.values()]]
    assert {b.scheme for b in bindings} == {"file", "oss", "nas", "pvc"}
    assert any(b.is_file for b in bindings) and any(not b.is_file for b in bindings)
    assert {b.mode for r in runs for b in r.inputs.values()} == {"mount", "download"}
    assert max(len(r.models) for r in runs) == 10
    spots = [r.spot for r in runs if r.spot]
    assert any(s.bid_discount for s in spots) and any(s.bid_price for s in spots)
    assert any(s.bid_discount is None and s.bid_price is None for s in spots)
    assert any(r.fault_tolerance for r in runs)
    assert any(r.advanced.custom_ports for r in runs)
    refs = {r.component_ref for r in runs}
    assert any("@" in ref for ref in refs) and any("/" in ref for ref in refs)
    assert any("/" not in ref and "@" not in ref for ref in refs)


def _run(name: str) -> Run:
    spec = load(VALID / "runs" / f"{name}.yaml")
    assert isinstance(spec, Run)
    return spec


def test_tf_full_run_model() -> None:
    run = _run("tf-full")
    assert run.component.ref == "tf-ps-worker@2.0.1"
    assert run.tags == {"cost.center_2": "A-17", "purpose": "baseline,resume", "team": "ads"}
    # Every component parameter, in declaration order; Float values are floats.
    assert list(run.parameters) == [p.name for p in run.component.parameters]
    assert run.parameters["learning-rate"] == 0.01
    assert run.parameters["run-note"] == "it's a 'quoted' & piped | value"
    test = run.inputs["test"]
    assert (test.scheme, test.is_file, test.filename, test.mode) == (
        "nas",
        True,
        "eval.tfrecord",
        "mount",
    )
    assert run.inputs["train"].mode == "download"
    assert run.outputs["checkpoints"].location == "ckpt-claim"
    assert [m.version for m in run.models[:3]] == ["1", "2024.01", None]
    assert list(run.resources) == ["chief", "ps", "worker"]
    assert run.resources["worker"].cpu is not None and run.resources["worker"].cpu.value == 3.5
    assert run.total_replicas == 7 and run.uses_gpu
    assert (run.priority, run.scheduling.value) == (9, "centralized")
    assert run.spot is not None and run.spot.bid_discount == 30
    assert run.fault_tolerance is not None
    assert (run.fault_tolerance.max_restarts, run.fault_tolerance.unconditional) == (128, True)
    assert run.fault_tolerance.hang_timeout_seconds == 45 * 60
    assert run.env == {"DEBUG": "true", "OMP_NUM_THREADS": "4", "TF_CPP_MIN_LOG_LEVEL": "2"}
    assert run.timeout_seconds == 36 * 3600
    assert run.keep_seconds == 2 * 86400
    assert run.run_as_user == 0
    assert run.pull_secret == "ctr-pull" and run.component.image_pull_secret == "acr-credentials"
    assert (run.namespace, run.service_account) == ("team-ads", "trainer")


def test_torch_run_resolves_name_at_version_and_relative_files() -> None:
    run = _run("torch-advanced")
    assert run.component.ref == "torch-ddp@1.1.0"
    data = run.inputs["data"]
    assert data.path == str(VALID / "runs" / "data") + "/" and not data.is_file
    assert run.inputs["pretrained"].path == str(VALID / "runs" / "data" / "eval.csv")
    assert run.advanced.custom_ports == (10000, *range(10001, 10011), 23457)
    assert run.advanced.create_svc_for_all_workers is False  # true is refused: KubeDL has none
    assert run.spot is not None and run.spot.bid_price == 1.25
    assert run.parameters["lr"] == 10.0 and isinstance(run.parameters["lr"], float)
    assert run.resources["master"].replicas == 1
    assert run.timeout_seconds == 3600


def test_component_versions_resolve_by_name() -> None:
    assert _run("torch-old").component.version == "1.0.0"
    assert _run("torch-latest").component.version == "1.1.0"
    assert _run("xgb-latest").component.ref == "xgb-git@0.3.0"


def test_defaults_of_a_minimal_run() -> None:
    run = _run("custom-minimal")
    assert run.name == "r"
    assert dict(run.resources) == {"worker": run.resources["worker"]}
    assert run.resources["worker"].replicas == 1 and run.resources["worker"].gpu == 0
    assert run.run_as_user == 1000
    assert run.fault_tolerance is None and run.spot is None and run.priority is None
    assert run.scheduling.value == "intelligent"
    old = _run("torch-old")
    assert old.fault_tolerance is not None and old.fault_tolerance.max_restarts == 3
    assert old.advanced.custom_port_num_per_worker == 4


# -- invalid ------------------------------------------------------------------------------------


def _rendered(path: Path) -> str:
    """Load `path` from inside the invalid directory so the rendered file names are relative."""
    try:
        spec = Loader().load(Path(path.name))
    except SpecError as err:
        text = err.render()
    else:
        raise AssertionError(f"{path.name} is in invalid/ but loaded: {spec!r}")
    return text.replace(str(SPECS), "<specs>") + "\n"


@pytest.mark.parametrize("path", INVALID_FILES, ids=_id)
def test_invalid_fixture_gives_exactly_its_expected_diagnostics(
    path: Path, monkeypatch: pytest.MonkeyPatch, golden_update: bool
) -> None:
    monkeypatch.chdir(INVALID)
    got = _rendered(path)
    expected_file = path.with_suffix(".expected")
    if golden_update:
        expected_file.write_text(got)
    assert expected_file.is_file(), f"no {expected_file.name}; run pytest with --update-golden"
    assert got == expected_file.read_text()


def test_every_expected_file_has_its_fixture() -> None:
    expected = {p.stem for p in INVALID.glob("*.expected")}
    assert expected == {p.stem for p in INVALID_FILES}


@pytest.mark.parametrize("path", INVALID_FILES, ids=_id)
def test_every_invalid_diagnostic_is_located(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(INVALID)
    with pytest.raises(SpecError) as caught:
        Loader().load(Path(path.name))
    for d in caught.value.diagnostics():
        assert d.file and d.message
        assert d.line is not None and d.line >= 1, d
        assert d.column is not None and d.column >= 1, d
