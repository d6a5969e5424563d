"""spec.models in a local run: each model is copied into the run directory and the process finds
it at `$MODEL` / `$MODEL_<NAME>` (real runs, real files, the fixture `modelcheck` reports)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.clirunner import Cli
from tests.local.helpers import on_host, write_run
from trainstack.local.bindings import LocalBindingError, localize
from trainstack.local.sandbox import Layout, SandboxError, prepare
from trainstack.registry import Registry, RunRecord, RunStatus
from trainstack.spec import load_run


def _records(home: Path) -> list[RunRecord]:
    with Registry.open(home) as reg:
        return reg.list()


def _model_dir(tmp: Path, name: str, files: dict[str, str]) -> Path:
    root = tmp / name
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _report(result: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((result / "models.json").read_text())
    return report


BASE_FILES = {"saved_model.pb": "graph v1", "variables/variables.index": "index v1"}


@pytest.mark.slow
def test_two_models_arrive_at_model_and_model_name(tmp_path: Path, cli: Cli) -> None:
    base = _model_dir(tmp_path, "base", BASE_FILES)
    head = tmp_path / "weights" / "head.pt"
    head.parent.mkdir()
    head.write_text("head weights v2")
    spec = write_run(
        tmp_path,
        "modelcheck",
        "incremental",
        models=[
            {"name": "base", "uri": f"file://{base}/", "version": 1},
            {"name": "head-v2", "uri": f"file://{head}"},
        ],
    )
    result = tmp_path / "result"
    done = cli("run", spec, "--local", "--output", f"result={result}")
    assert done.returncode == 0, done.stdout + done.stderr

    (record,) = _records(cli.home)
    assert record.status is RunStatus.SUCCEEDED and record.run_dir is not None
    layout = Layout(record.run_dir)
    seen = _report(result)
    assert set(seen) == {"MODEL", "MODEL_BASE", "MODEL_HEAD_V2"}
    # $MODEL is the first model; a directory model is its directory, with every file copied.
    assert seen["MODEL"] == seen["MODEL_BASE"]
    assert on_host(seen["MODEL_BASE"]["path"], layout.root) == layout.model_dir("base")
    assert seen["MODEL_BASE"]["kind"] == "directory"
    assert seen["MODEL_BASE"]["files"] == BASE_FILES
    # A model bound to one file lands as that file inside its directory.
    assert on_host(seen["MODEL_HEAD_V2"].pop("path"), layout.root) == (
        layout.model_dir("head-v2") / "head.pt"
    )
    assert seen["MODEL_HEAD_V2"] == {
        "kind": "file",
        "link": False,
        "content": "head weights v2",
    }
    # Copies, as a pre-start download would give: the run directory holds no links to them.
    assert not seen["MODEL_BASE"]["link"]
    assert not layout.model_dir("base").is_symlink()
    assert (layout.model_dir("base") / "saved_model.pb").stat().st_ino != (
        base / "saved_model.pb"
    ).stat().st_ino


@pytest.mark.slow
def test_model_flag_rebinds_a_model_to_a_local_path(tmp_path: Path, cli: Cli) -> None:
    spec = write_run(
        tmp_path,
        "modelcheck",
        "remote-models",
        models=[
            {"name": "base", "uri": "oss://acme-models/ctr/v1/"},
            {"name": "head", "uri": "oss://acme-models/ctr/head.pt"},
        ],
    )
    local_base = _model_dir(tmp_path, "local-base", {"model.bin": "local base"})
    other_head = tmp_path / "other.ckpt"
    other_head.write_text("local head")
    result = tmp_path / "result"
    done = cli(
        "run",
        spec,
        "--local",
        "--output",
        f"result={result}",
        "--model",
        f"base=file://{local_base}",
        "--model",
        f"head={other_head}",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (record,) = _records(cli.home)
    assert record.run_dir is not None
    layout = Layout(record.run_dir)
    seen = _report(result)
    assert seen["MODEL"]["files"] == {"model.bin": "local base"}
    assert on_host(seen["MODEL_BASE"]["path"], layout.root) == layout.model_dir("base")
    # The override names a file: it lands under its own name, whatever the spec's binding said.
    assert (
        on_host(seen["MODEL_HEAD"]["path"], layout.root) == layout.model_dir("head") / "other.ckpt"
    )
    assert seen["MODEL_HEAD"]["content"] == "local head"

    typo = cli("run", spec, "--local", "--model", f"bse={local_base}")
    assert typo.returncode == 2
    assert "the run has no such model (its models: base, head)" in typo.stderr
    assert "Did you mean 'base'?" in typo.stderr
    missing = cli("run", spec, "--local", "--model", f"base={tmp_path / 'nope'}")
    assert missing.returncode == 2 and "no such file or directory" in missing.stderr
    assert "Traceback" not in typo.stderr + missing.stderr


def test_an_oss_model_is_a_clear_error(tmp_path: Path, cli: Cli) -> None:
    spec = write_run(
        tmp_path,
        "modelcheck",
        "oss-model",
        models=[
            {"name": "base", "uri": "oss://acme-models/ctr/v1/"},
        ],
    )
    done = cli("run", spec, "--local")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "model 'base' is bound to oss://acme-models/ctr/v1/" in done.stderr
    assert "--model base=PATH" in done.stderr
    assert _records(cli.home) == []  # refused before anything was recorded or started


def test_a_model_path_that_does_not_fit_its_binding_is_a_clear_error(tmp_path: Path) -> None:
    gone = write_run(
        tmp_path, "modelcheck", "gone", models=[{"name": "base", "uri": f"file://{tmp_path}/gone/"}]
    )
    with pytest.raises(SandboxError, match=r"model 'base': .*gone does not exist") as err:
        prepare(Layout(tmp_path / "run1"), localize(load_run(gone), {}, {}))
    assert err.value.hint == "pass --model base=PATH to use another location"

    # A model file without an extension reads as a directory in a URI; the override fixes it.
    weights = tmp_path / "weights"
    weights.write_text("w")
    spec = write_run(
        tmp_path, "modelcheck", "noext", models=[{"name": "base", "uri": f"file://{weights}"}]
    )
    with pytest.raises(SandboxError, match=r"names a directory but .*weights is a file"):
        prepare(Layout(tmp_path / "run2"), localize(load_run(spec), {}, {}))
    layout = Layout(tmp_path / "run3")
    prepare(layout, localize(load_run(spec), {}, {}, {"base": weights}))
    assert (layout.model_dir("base") / "weights").read_text() == "w"

    with pytest.raises(LocalBindingError, match="no such file"):
        localize(load_run(spec), {}, {}, {"base": tmp_path / "missing"})
