"""A spec field is declared once, on the model (trainstack.spec.fields.declare): a field added
there, and nowhere else, is refused when malformed (with the diagnostics' file, line and field),
loaded into the model, and written to training_job.json in the rendered job. Before, a field
added to the cerberus schema alone was accepted by `validate` and silently dropped."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.render.conftest import SPECS
from trainstack.errors import SpecError
from trainstack.render import render_run
from trainstack.spec import fastcheck, load_run, normalize, schema, structure
from trainstack.spec.fields import CONTEXTUAL, Load, Section, declare, schema_of, spec_fields
from trainstack.spec.model import Component, Run
from trainstack.spec.shapes import document, str_rule


@dataclass(frozen=True)
class RunWithQueue(Run):
    # The one edit: a new field of a run's spec.
    queue: str | None = declare(
        Section.SPEC, "queue", str_rule(r"[a-z][a-z0-9-]*", "a queue name such as gpu-a"),
        default=None,
    )  # fmt: skip


@pytest.fixture
def with_queue(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The loader, the validators and the renderer as they are, given the model with the new
    field: what the suite would see had the field been added to Run itself."""
    derived = document(
        "Run", schema_of(RunWithQueue, Section.METADATA), schema_of(RunWithQueue, Section.SPEC)
    )
    monkeypatch.setitem(schema.SCHEMAS, "Run", derived)
    monkeypatch.setattr(normalize, "Run", RunWithQueue)
    # Both validators keep what they built from the schema: built afresh here, and again after.
    monkeypatch.setattr(fastcheck, "_COMPILED", {})
    monkeypatch.setattr(structure, "_VALIDATORS", {})
    yield


def _run_file(tmp_path: Path, queue: object) -> Path:
    doc = yaml.safe_load((SPECS / "pytorch.run.yaml").read_text())
    component = (SPECS / doc["spec"]["component"]).resolve()
    doc["spec"]["component"] = str(component)
    doc["spec"]["queue"] = queue
    path = tmp_path / "queued.run.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_field_declared_on_the_model_is_loaded_and_written(
    tmp_path: Path, with_queue: None
) -> None:
    run = load_run(_run_file(tmp_path, "gpu-a"))
    assert isinstance(run, RunWithQueue) and run.queue == "gpu-a"
    manifests = render_run(run)
    config = next(
        m for m in manifests if m["kind"] == "ConfigMap" and "training_job.json" in m["data"]
    )
    assert json.loads(config["data"]["training_job.json"])["queue"] == "gpu-a"


def test_a_malformed_value_of_it_is_one_diagnostic(tmp_path: Path, with_queue: None) -> None:
    path = _run_file(tmp_path, "Not A Queue")
    with pytest.raises(SpecError) as raised:
        load_run(path)
    (problem,) = raised.value.diagnostics()
    assert problem.file == str(path) and problem.line is not None
    assert problem.path == "spec.queue"
    assert "a queue name such as gpu-a" in problem.message


def test_without_the_declaration_the_field_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as raised:
        load_run(_run_file(tmp_path, "gpu-a"))
    assert [d.path for d in raised.value.diagnostics()] == ["spec.queue"]


def test_every_conversion_a_declaration_may_name_has_its_function() -> None:
    assert set(normalize._CONVERT) == set(Load)
    assert set(CONTEXTUAL) <= set(Load)


@pytest.mark.parametrize("model", [Run, Component])
def test_every_field_of_the_specs_is_declared_but_what_the_loader_adds(model: type) -> None:
    """What the file gives is declared; the rest is the loader's (where the file is, the run's
    component object), never a value the file holds undeclared."""
    declared = {f.name for f in spec_fields(model)}
    others = {f.name for f in dataclasses.fields(model)} - declared
    assert others == ({"source", "component"} if model is Run else {"source"})
