"""A file the user names on the command line (`report -o`, `metrics --png/--csv`, `runs compare
--png`) replaces only a regular file: a link, a FIFO, a device or a folder at that path is one
clear error and is left as it was. The run is real; the verbs run in-process."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.metrics.conftest import charts_run


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("named")
    cli = Cli(tmp / "home")
    done = cli("run", charts_run(tmp, "good", layout="good"), "--local", "--no-install")
    assert done.code == 0, done.output
    return tmp / "home"


def _link(path: Path) -> Callable[[], None]:
    keep = path.parent / "keep.txt"
    keep.write_text("mine\n")
    path.symlink_to(keep)

    def check() -> None:
        assert path.is_symlink() and keep.read_text() == "mine\n"

    return check


def _fifo(path: Path) -> Callable[[], None]:
    os.mkfifo(path)
    return lambda: stat.S_ISFIFO(path.lstat().st_mode) or pytest.fail("FIFO replaced")


def _folder(path: Path) -> Callable[[], None]:
    path.mkdir()
    return lambda: path.is_dir() or pytest.fail("folder replaced")


HAZARDS = {
    "symlink": (_link, "a symbolic link"),
    "fifo": (_fifo, "a FIFO"),
    "folder": (_folder, "a folder"),
}
# verb → (argv given the target file's folder and name; the file the verb writes there)
VERBS = {
    "report": lambda d: (["report", "good", "-o", d / "r.html"], d / "r.html"),
    "metrics-png": lambda d: (["metrics", "good", "--png", d], d / "epoch.png"),
    "metrics-csv": lambda d: (["metrics", "good", "--csv", d], d / "epoch.csv"),
    "compare-png": lambda d: (
        ["runs", "compare", "good", "good", "--overlay", "epoch/loss", "--png", d / "o.png"],
        d / "o.png",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("hazard", sorted(HAZARDS))
@pytest.mark.parametrize("verb", sorted(VERBS))
def test_only_a_regular_file_is_replaced(
    home: Path, tmp_path: Path, verb: str, hazard: str
) -> None:
    argv, target = VERBS[verb](tmp_path / "out")
    target.parent.mkdir(parents=True, exist_ok=True)
    make, kind = HAZARDS[hazard]
    still_there = make(target)
    done = Cli(home).invoke(*argv)
    assert done.code == 2, done.output
    # click refuses a folder itself for options declared as files (`-o`, `runs compare --png`)
    clicks = hazard == "folder" and "is a directory." in done.err
    assert clicks or f"cannot write {target}: it is {kind}, not a regular file" in done.err
    assert "Traceback" not in done.output
    still_there()
    assert not any(p.name.endswith("trainstack-partial") for p in target.parent.iterdir())


@pytest.mark.slow
def test_a_regular_file_is_still_replaced(home: Path, tmp_path: Path) -> None:
    (tmp_path / "r.html").write_text("old")
    done = Cli(home).invoke("report", "good", "-o", tmp_path / "r.html")
    assert done.code == 0, done.output
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")


def a_device(tmp_path: Path) -> Path:
    """A character device to write over: as root, one of our own (the code under test, were it
    wrong, would replace it — never the machine's /dev/null); otherwise /dev/null, which only
    root could replace."""
    if os.geteuid() != 0:
        return Path("/dev/null")
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # the null device's numbers
    return node


def test_a_device_is_never_replaced(home: Path, tmp_path: Path) -> None:
    device = a_device(tmp_path)
    done = Cli(home).invoke("report", "good", "-o", device)
    assert done.code == 2, done.output
    assert f"cannot write {device}: it is a device, not a regular file" in done.err
    assert stat.S_ISCHR(os.lstat(device).st_mode)


def test_a_link_planted_as_the_partial_file_is_not_written_through(
    home: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    (tmp_path / ".r.html.trainstack-partial").symlink_to(victim)
    done = Cli(home).invoke("report", "good", "-o", tmp_path / "r.html")
    assert done.code == 0, done.output
    assert victim.read_text() == "mine\n"
    assert (tmp_path / "r.html").is_file() and not (tmp_path / "r.html").is_symlink()
