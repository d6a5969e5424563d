"""Same inputs → byte-identical manifests, across processes (hash seeds) and directories."""

from __future__ import annotations

from pathlib import Path

from tests.clirunner import Cli
from tests.render.conftest import CASES, SPECS
from tests.spec.clirun import trainstack
from trainstack.render import dump_yaml, render_run


def test_repeat_in_process() -> None:
    for case in CASES:
        first = dump_yaml(render_run(case.run(), options=case.options))
        assert dump_yaml(render_run(case.run(), options=case.options)) == first, case.name


def _cli_stdout(seed: str) -> str:
    out = trainstack("render", SPECS / "tf.run.yaml", env={"PYTHONHASHSEED": seed}, timeout=60)
    assert out.code == 0, out.err
    return out.out


def test_byte_identical_across_processes() -> None:
    assert _cli_stdout("1") == _cli_stdout("2")


def test_output_directory_is_stable(tmp_path: Path, capsys) -> None:
    run = str(SPECS / "pytorch.run.yaml")
    done = Cli().invoke("render", run, "-o", str(tmp_path / "a"))
    assert done.code == 0, done.err
    done = Cli().invoke("render", run, "-o", str(tmp_path / "b"))
    assert done.code == 0, done.err
    a = {p.name: p.read_bytes() for p in sorted((tmp_path / "a").glob("*.yaml"))}
    b = {p.name: p.read_bytes() for p in sorted((tmp_path / "b").glob("*.yaml"))}
    assert a == b
    # Besides the manifests, only the index of what render wrote (no suffix kubectl reads).
    assert (tmp_path / "a" / ".trainstack-manifests").read_bytes() == (
        tmp_path / "b" / ".trainstack-manifests"
    ).read_bytes()
    assert len(list((tmp_path / "a").iterdir())) == len(a) + 1
    assert list(a) == [
        "00-configmap-torch-ddp-01-trainstack-config.yaml",
        "01-configmap-torch-ddp-01-code.yaml",
        "02-configmap-torch-ddp-01-trainstack-launcher.yaml",
        "03-pytorchjob-torch-ddp-01.yaml",
    ]
    done = Cli().invoke("render", run)
    assert done.code == 0, done.err
    stream = done.out
    assert stream == "".join("---\n" + t.decode() for t in a.values())
