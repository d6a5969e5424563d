"""Bindings made local and the run directory built from them (real files, real specs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import write_run
from trainstack.local.bindings import (
    LocalBindingError,
    bind_unbound_outputs,
    localize,
    parse_overrides,
)
from trainstack.local.sandbox import Layout, SandboxError, commit_outputs, prepare
from trainstack.spec import load_run


def test_overrides_parse_and_reject_malformed_items(tmp_path: Path) -> None:
    got = parse_overrides([f"data={tmp_path}", "model=file:///tmp/m/"], "--input")
    assert got == {"data": tmp_path, "model": Path("/tmp/m")}
    for bad in (["data"], ["=x"], ["data="]):
        with pytest.raises(LocalBindingError, match="expected NAME=PATH"):
            parse_overrides(bad, "--input")
    with pytest.raises(LocalBindingError, match="given twice"):
        parse_overrides(["a=/x", "a=/y"], "--output")


def test_localize_rebinds_and_checks(tmp_path: Path) -> None:
    spec = write_run(
        tmp_path,
        "probe",
        "b",
        parameters={"mode": "quick"},
        inputs={"data": "oss://acme-data/x/"},
        outputs={"result": "oss://acme-out/y/"},
    )
    run = load_run(spec)
    with pytest.raises(LocalBindingError, match="input 'data' is bound to oss://acme-data/x/"):
        localize(run, {}, {})
    data_file = tmp_path / "train.csv"
    data_file.write_text("a,b\n")
    local = localize(run, {"data": data_file}, {"result": tmp_path / "out"})
    assert local.inputs["data"].is_file and local.inputs["data"].path == str(data_file)
    assert local.outputs["result"].path == str(tmp_path / "out") + "/"
    with pytest.raises(LocalBindingError, match="no such file"):
        localize(run, {"data": tmp_path / "missing"}, {"result": tmp_path})
    with pytest.raises(LocalBindingError, match="Did you mean 'result'"):
        localize(run, {"data": data_file}, {"results": tmp_path})


def test_sandbox_places_inputs_and_commits_outputs(tmp_path: Path) -> None:
    data_dir, data_file = tmp_path / "dir", tmp_path / "one.csv"
    data_dir.mkdir()
    (data_dir / "x.txt").write_text("x")
    data_file.write_text("1\n")
    spec = write_run(
        tmp_path,
        "probe",
        "s",
        parameters={"mode": "quick"},
        inputs={"data": {"uri": f"file://{data_dir}/", "mode": "download"}},
    )
    out = tmp_path / "committed"
    run = localize(load_run(spec), {}, {"result": out})
    layout = Layout(tmp_path / "run")
    run = bind_unbound_outputs(run, layout.output_dir)
    prepare(layout, run)
    copied = layout.input_dir("data")
    assert not copied.is_symlink() and (copied / "x.txt").read_text() == "x"  # download: copy
    assert (layout.usercode / "probe.py").is_file()
    (layout.output_dir("result") / "sub").mkdir()
    (layout.output_dir("result") / "sub" / "m.bin").write_bytes(b"\0" * 10)
    (layout.output_dir("state") / "count").write_text("1")
    committed = {c.channel: c for c in commit_outputs(layout, run)}
    assert (out / "sub" / "m.bin").read_bytes() == b"\0" * 10
    assert committed["result"].files == 1 and committed["result"].bytes == 10
    assert "state" not in committed  # unbound: it stays in the run directory

    # An override keeps the spec's mode; without one, an input is mounted: a link.
    plain = write_run(tmp_path, "probe", "s2", parameters={"mode": "quick"})
    mounted = localize(load_run(plain), {"data": data_file}, {})
    layout2 = Layout(tmp_path / "run2")
    prepare(layout2, mounted)
    linked = layout2.input_dir("data") / "one.csv"
    assert linked.is_symlink() and linked.resolve() == data_file.resolve()


def test_code_a_local_run_cannot_fetch_is_a_user_error(tmp_path: Path) -> None:
    comp = tmp_path / "comp" / "component.yaml"
    comp.parent.mkdir()
    comp.write_text(
        (Path(__file__).parent / "fixtures/components/probe/component.yaml")
        .read_text()
        .replace("code: ./src", "code: oss://acme-code/probe/")
    )
    run = load_run(write_run(tmp_path, comp, "c", parameters={"mode": "quick"}))
    with pytest.raises(SandboxError, match="oss://acme-code/probe/ cannot be fetched"):
        prepare(Layout(tmp_path / "run"), run)


@pytest.mark.slow
def test_output_override_and_run_without_local(tmp_path: Path, cli: Cli) -> None:
    spec = write_run(tmp_path, "probe", "o", parameters={"mode": "quick", "seconds": 0.0})
    done = cli("run", spec, "--local", "--output", f"result={tmp_path / 'res'}")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "res" / "worker-0.txt").read_text().startswith("o-")
    assert f"result → {tmp_path / 'res'}" in done.stdout
    nolocal = cli("run", spec)
    assert nolocal.returncode == 2 and "--local" in nolocal.stderr
