"""Local code packing: code stays inside the component, links are
followed only inside it, special files are refused unopened, and `render` (the ConfigMap tar)
and `run --local` (the copy) walk the code directory the same way. Real files, real links."""

from __future__ import annotations

import base64
import gzip
import io
import os
import signal
import socket
import stat
import tarfile
from pathlib import Path

import pytest

from tests.local.helpers import write_run
from trainstack.errors import SpecError, UserError
from trainstack.local.sandbox import Layout, prepare
from trainstack.render import RenderError, RenderOptions, render_run
from trainstack.spec import load_component, load_run

COMPONENT = """\
apiVersion: trainstack.dev/v1
kind: Component
metadata: {name: packer, version: 1.0.0}
spec:
  jobType: custom
  image: registry.example.com/test/python:3
  code: CODE
  command: python main.py
"""


def _component(tmp: Path, code: str = "./src") -> Path:
    comp = tmp / "comp"
    (comp / "src").mkdir(parents=True)
    (comp / "src" / "main.py").write_text("print('hi')\n")
    (comp / "component.yaml").write_text(COMPONENT.replace("CODE", code))
    return comp


def _packed(tmp: Path) -> dict[str, bytes]:
    """What `render` puts in the code ConfigMap, as {name: content}."""
    run = load_run(write_run(tmp, tmp / "comp" / "component.yaml", "r"))
    docs = render_run(run, options=RenderOptions())
    data = next(d for d in docs if d["kind"] == "ConfigMap" and "binaryData" in d)
    raw = gzip.decompress(base64.b64decode(data["binaryData"]["code.tar.gz"]))
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        return {
            m.name: tar.extractfile(m).read()
            for m in tar.getmembers()  # type: ignore[union-attr]
            if m.isfile()
        }


def _copied(tmp: Path) -> dict[str, bytes]:
    """What `run --local` copies into the run directory's usercode/."""
    run = load_run(write_run(tmp, tmp / "comp" / "component.yaml", "l"))
    layout = Layout(tmp / "rundir")
    prepare(layout, run)
    return {
        p.relative_to(layout.usercode).as_posix(): p.read_bytes()
        for p in sorted(layout.usercode.rglob("*"))
        if p.is_file()
    }


class _Hung(Exception):
    pass


def _both_refuse(tmp: Path, match: str) -> None:
    # An alarm turns a hang (opening a FIFO blocks until a writer comes) into a failure.
    def hung(_signum: int, _frame: object) -> None:
        raise _Hung("blocked: a special file was opened")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        with pytest.raises(UserError, match=match):
            _packed(tmp)
        with pytest.raises(UserError, match=match):
            _copied(tmp)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("code", ["../elsewhere", "/etc", "~/src", "src/../../elsewhere"])
def test_code_outside_the_component_is_refused_at_validation(tmp_path: Path, code: str) -> None:
    _component(tmp_path, code)
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(SpecError) as err:
        load_component(tmp_path / "comp" / "component.yaml")
    [diag] = err.value.diagnostics()
    assert diag.file.endswith("component.yaml") and diag.line == 7 and diag.path == "spec.code"
    assert "code must live inside" in diag.message


def test_code_dir_that_is_a_link_out_of_the_component_is_refused(tmp_path: Path) -> None:
    comp = _component(tmp_path, "./linked")
    (comp / "linked").symlink_to(tmp_path)
    with pytest.raises(SpecError, match="outside the component's directory"):
        load_component(comp / "component.yaml")


def test_a_link_to_a_file_outside_is_refused_naming_the_link(tmp_path: Path) -> None:
    comp = _component(tmp_path)
    secret = tmp_path / "credentials"
    secret.write_text("aws_secret_access_key = hunter2\n")
    (comp / "src" / "creds").symlink_to(secret)
    _both_refuse(tmp_path, r"src/creds is a symbolic link to .*credentials, which is outside")


def test_a_link_that_stays_inside_is_followed_the_same_way_by_render_and_local(
    tmp_path: Path,
) -> None:
    comp = _component(tmp_path)
    (comp / "shared").mkdir()
    (comp / "shared" / "util.py").write_text("X = 1\n")
    (comp / "shared" / "__pycache__").mkdir()
    (comp / "shared" / "__pycache__" / "util.cpython-311.pyc").write_bytes(b"\0")
    (comp / "src" / "lib").symlink_to("../shared", target_is_directory=True)
    (comp / "src" / "readme").symlink_to("../component.yaml")
    (comp / "src" / ".venv").symlink_to(tmp_path, target_is_directory=True)  # a cache: skipped
    (comp / "src" / "empty-parent" / "deep").mkdir(parents=True)
    (comp / "src" / "deep.py").write_text("")
    packed, copied = _packed(tmp_path), _copied(tmp_path)
    assert packed == copied
    assert sorted(packed) == ["deep.py", "lib/util.py", "main.py", "readme"]
    assert packed["lib/util.py"] == b"X = 1\n"


def test_a_directory_link_loop_is_refused(tmp_path: Path) -> None:
    comp = _component(tmp_path)
    (comp / "src" / "again").symlink_to(".", target_is_directory=True)
    _both_refuse(tmp_path, r"src/again is a symbolic link to a directory that contains it")


def test_dangling_links_and_self_loops_are_named(tmp_path: Path) -> None:
    comp = _component(tmp_path)
    (comp / "src" / "gone").symlink_to("nothing-here")
    _both_refuse(tmp_path, r"src/gone is a dangling symbolic link \(to nothing-here\)")
    (comp / "src" / "gone").unlink()
    (comp / "src" / "me").symlink_to("me")
    _both_refuse(tmp_path, r"src/me is a symbolic link loop")


def test_a_fifo_is_refused_without_being_opened(tmp_path: Path) -> None:
    comp = _component(tmp_path)
    os.mkfifo(comp / "src" / "pipe")  # opening it for reading would block forever
    _both_refuse(tmp_path, r"src/pipe is a FIFO \(named pipe\), not a regular file")


def test_a_socket_is_refused(tmp_path: Path) -> None:
    comp = _component(tmp_path)
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(comp / "src" / "s.sock"))
        _both_refuse(tmp_path, r"src/s.sock is a socket")
    finally:
        sock.close()


def test_a_device_reached_through_a_link_is_refused(tmp_path: Path) -> None:
    comp = _component(tmp_path)
    (comp / "src" / "null").symlink_to("/dev/null")
    # /dev is outside the component: refused for that, before its type matters.
    _both_refuse(tmp_path, r"src/null is a symbolic link to /dev/null, which is outside")


def test_a_huge_file_is_refused_while_streaming(tmp_path: Path) -> None:
    comp = _component(tmp_path)
    big = comp / "src" / "weights.bin"
    with big.open("wb") as fh:  # 64 MiB of incompressible bytes, written in pieces
        for _ in range(64):
            fh.write(os.urandom(1 << 20))
    run = load_run(write_run(tmp_path, comp / "component.yaml", "r"))
    with pytest.raises(RenderError, match="packs to more than the 878 KiB"):
        render_run(run, options=RenderOptions())


def test_huge_file_packing_stops_early(tmp_path: Path) -> None:
    from trainstack.render.codepack import TooLarge, archive

    comp = _component(tmp_path)
    big = comp / "src" / "weights.bin"
    with big.open("wb") as fh:  # 12 MiB: under 16 x the limit, so packing starts
        for _ in range(12):
            fh.write(os.urandom(1 << 20))
    with pytest.raises(TooLarge) as err:
        archive(comp / "src", comp, limit=1_000_000)
    # Stopped within a chunk or two of the limit, not after compressing all 12 MiB.
    assert err.value.written < 2_000_000


def test_a_huge_sparse_file_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.render import codepack

    comp = _component(tmp_path)
    with (comp / "src" / "zeros.bin").open("wb") as fh:
        fh.truncate(64 << 20)  # 64 MiB of zeros (sparse): it would compress under the limit
    run = load_run(write_run(tmp_path, comp / "component.yaml", "r"))

    def no_read(_f: object) -> None:
        raise AssertionError("a file was opened: the sizes alone should refuse this directory")

    monkeypatch.setattr(codepack, "open_code_file", no_read)
    with pytest.raises(RenderError, match="packs to more than the 878 KiB"):
        render_run(run, options=RenderOptions())


def test_a_sparse_file_in_the_code_is_copied_sparsely_for_a_local_run(tmp_path: Path) -> None:
    """A 20 GiB sparse file became 21 GB of real data in the run directory.
    The local copy keeps holes as holes (SEEK_DATA/SEEK_HOLE, lseek(2)): the same content, and
    only the blocks the source has."""
    comp = _component(tmp_path)
    sparse = comp / "src" / "table.bin"
    size = 256 << 20
    with sparse.open("wb") as fh:
        fh.truncate(size)
        fh.seek(4096 * 10)
        fh.write(b"head")
        fh.seek(size - 4)
        fh.write(b"tail")
    assert os.stat(sparse).st_blocks * 512 < (1 << 20), "the test's file system keeps holes"
    layout = Layout(tmp_path / "rundir")
    prepare(layout, load_run(write_run(tmp_path, comp / "component.yaml", "l")))
    copied = layout.usercode / "table.bin"
    st = os.stat(copied)
    assert st.st_size == size
    assert st.st_blocks * 512 < (1 << 20)  # not 256 MiB of zeros written out
    with copied.open("rb") as fh:
        fh.seek(4096 * 10)
        assert fh.read(4) == b"head"
        fh.seek(size - 4)
        assert fh.read(4) == b"tail"
        fh.seek(size // 2)
        assert fh.read(8) == b"\0" * 8


def _outward(comp: Path) -> None:
    (comp.parent / "secret").write_text("x")
    (comp / "src" / "creds").symlink_to(comp.parent / "secret")


def _device(comp: Path) -> None:
    if os.geteuid() == 0:  # a node of our own, never opened; not one of /dev's
        os.mknod(comp / "src" / "dev", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    else:  # without root, a link to one (refused as outward before its type matters)
        (comp / "src" / "dev").symlink_to("/dev/null")


CODE_HAZARDS = {
    "outward-link": (_outward, r"src/creds is a symbolic link to .*secret, which is outside"),
    "fifo": (lambda c: os.mkfifo(c / "src" / "pipe"), r"src/pipe is a FIFO"),
    "device": (_device, r"src/dev is (a character device|a symbolic link to /dev/null)"),
    "dangling": (lambda c: (c / "src" / "gone").symlink_to("nowhere"), r"dangling symbolic"),
    "loop": (
        lambda c: (c / "src" / "again").symlink_to(".", target_is_directory=True),
        r"a link loop",
    ),
}


@pytest.mark.parametrize("hazard", sorted(CODE_HAZARDS))
def test_validate_render_and_local_refuse_the_same_code_directory(
    tmp_path: Path, hazard: str
) -> None:
    """`validate` passed what `render` and `run` refused; one walker decides."""
    import re

    from trainstack.spec.check import validate

    make, said = CODE_HAZARDS[hazard]
    comp = _component(tmp_path)
    make(comp)
    diags = validate([comp / "component.yaml"]).diagnostics
    assert [(d.path, d.code) for d in diags] == [("spec.code", "code")], diags
    assert re.search(said, diags[0].message), diags[0].message
    assert diags[0].line == 7
    _both_refuse(tmp_path, said)
