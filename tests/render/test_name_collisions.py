"""Names that collide after Kubernetes/env normalisation. Models whose names
differ only in case or '-'/'_' are refused by validate (they share $MODEL_<NAME> and every
object name); a download input's copy volume can no longer collide with another input's volume;
and render has a last guard that no two volumes, PVs or claims share a name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spec.clirun import trainstack
from trainstack.render import RenderError, RenderOptions, render_run
from trainstack.render.parts import PodParts
from trainstack.spec import load_run

COMPONENT = """\
apiVersion: trainstack.dev/v1
kind: Component
metadata: {name: names, version: 1.0.0}
spec:
  jobType: custom
  image: registry.example.com/x:1
  command: python main.py
  inputs: [{name: data}, {name: data-copy}]
"""


def _write(tmp: Path, run_spec: str) -> Path:
    (tmp / "component.yaml").write_text(COMPONENT)
    run = tmp / "run.yaml"
    run.write_text(
        "apiVersion: trainstack.dev/v1\nkind: Run\nmetadata: {name: names}\nspec:\n"
        "  component: ./component.yaml\n" + run_spec
    )
    return run


@pytest.mark.parametrize("second", ["base_model", "Base-Model", "BASE_MODEL"])
def test_models_that_normalise_to_one_name_are_refused(tmp_path: Path, second: str) -> None:
    run = _write(
        tmp_path,
        "  models:\n"
        "    - {name: base-model, uri: 'oss://acme-models/a/'}\n"
        f"    - {{name: {second}, uri: 'oss://acme-models/b/'}}\n",
    )
    result = trainstack("validate", run)
    assert result.code == 2
    assert (
        f"run.yaml:8:14: spec.models[1].name: model names {second!r} and 'base-model' "
        "(spec.models[0]) both become $MODEL_BASE_MODEL"
    ) in result.err


def test_distinct_models_still_validate(tmp_path: Path) -> None:
    run = _write(
        tmp_path,
        "  models:\n"
        "    - {name: base-model, uri: 'oss://acme-models/a/'}\n"
        "    - {name: base-model-2, uri: 'oss://acme-models/b/'}\n",
    )
    assert trainstack("validate", run).code == 0


def test_a_download_input_and_an_input_named_like_its_copy_render_distinct_volumes(
    tmp_path: Path,
) -> None:
    run = load_run(
        _write(
            tmp_path,
            "  inputs:\n"
            "    data: {uri: 'oss://acme-data/a/', mode: download}\n"
            "    data-copy: 'oss://acme-data/b/'\n",
        )
    )
    docs = render_run(run, options=RenderOptions())
    job = docs[-1]
    names = [v["name"] for v in job["spec"]["template"]["spec"]["volumes"]]
    assert len(names) == len(set(names)), names
    assert {"in-data", "copy-in-data", "in-data-copy"} <= set(names)
    claims = [d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolumeClaim"]
    pvs = [d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolume"]
    assert len(claims) == len(set(claims)) == 2 and len(pvs) == len(set(pvs)) == 2


def test_the_last_guard_refuses_a_duplicate_volume(tmp_path: Path) -> None:
    from trainstack.render.storage import check_unique_names

    run = load_run(_write(tmp_path, ""))
    parts = PodParts(volumes=({"name": "in-x", "emptyDir": {}},)) + PodParts(
        volumes=({"name": "in-x", "emptyDir": {}},)
    )
    with pytest.raises(RenderError, match="two volumes would be named 'in-x'"):
        check_unique_names(run, parts)
