"""`render -o DIR` replaces or removes only the files trainstack wrote there:
the user's own files in DIR are never overwritten or deleted."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clirunner import Cli, Result
from tests.render.conftest import SPECS


def _render(out: Path, spec: str = "mpi.run.yaml", *, code: int = 0) -> Result:
    done = Cli().invoke("render", str(SPECS / spec), "-o", str(out))
    assert done.code == code, done.err
    return done


def _fails(out: Path, capsys: pytest.CaptureFixture[str], spec: str = "mpi.run.yaml") -> str:
    done = _render(out, spec, code=2)
    err = done.err
    assert "Traceback" not in err
    return err


def test_rerender_replaces_and_removes_only_its_own_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _render(out, "pytorch.run.yaml")  # ConfigMaps and a PyTorchJob
    first = sorted(p.name for p in out.iterdir())
    assert ".trainstack-manifests" in first
    (out / "notes.md").write_text("mine\n")
    (out / "99-mine-extra.yaml").write_text("kind: Mine\n")  # looks like ours; is not
    _render(out)  # another run: different files
    names = sorted(p.name for p in out.iterdir())
    assert (out / "notes.md").read_text() == "mine\n"
    assert (out / "99-mine-extra.yaml").read_text() == "kind: Mine\n"
    assert not set(first) - {".trainstack-manifests"} & set(names)  # ours: replaced
    # The MPI run's objects: ConfigMaps, the launcher's account, Role and binding, the job.
    kinds = ("mpijob", "configmap", "serviceaccount", "role")
    assert [n for n in names if any(k in n for k in kinds)] == [
        n for n in names if n not in ("notes.md", "99-mine-extra.yaml", ".trainstack-manifests")
    ]
    assert any("mpijob" in n for n in names)


def test_a_users_file_in_the_way_is_not_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    _render(out)
    ours = sorted(p for p in out.iterdir() if p.suffix == ".yaml")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    mine = fresh / ours[0].name
    mine.write_text("my own file\n")
    err = _fails(fresh, capsys)
    assert f"{mine} already exists and was not written by trainstack render" in err
    assert mine.read_text() == "my own file\n"
    assert sorted(p.name for p in fresh.iterdir()) == [mine.name]  # nothing else written


def test_an_edited_file_of_ours_is_neither_replaced_nor_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    _render(out, "pytorch.run.yaml")
    edited = sorted(out.glob("*.yaml"))[0]
    edited.write_text(edited.read_text() + "# my edit\n")
    err = _fails(out, capsys)  # the other run's files would remove it
    assert "was changed since trainstack render wrote it" in err
    assert edited.read_text().endswith("# my edit\n")


def test_a_link_put_in_place_of_our_file_is_not_written_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    _render(out)
    target = tmp_path / "bashrc"
    target.write_text("precious\n")
    victim = sorted(out.glob("*.yaml"))[0]
    victim.unlink()
    victim.symlink_to(target)
    err = _fails(out, capsys)
    assert "no longer the file trainstack render wrote" in err
    assert target.read_text() == "precious\n"


def test_a_foreign_index_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / ".trainstack-manifests").write_text('{"files": {"../../etc/passwd": "x"}}')
    err = _fails(out, capsys)
    assert "is not an index trainstack wrote" in err
