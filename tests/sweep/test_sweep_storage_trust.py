"""A sweep's optuna storage someone else could have written (trainstack/statetrust.py): which
points a sweep runs, which count as done and which is best rest on it, so one owned by another
user, writable by others, a link, or in a folder others can write is refused and left as it is.
What trainstack makes there is the user's alone whatever the umask.

The tests hold as root (CI: "another user" is a real chown to an unused uid) and as an ordinary
user (trainstack is told it runs as another uid, so that the user's own files are another's).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.sweep.helpers import hold_project
from trainstack import statetrust
from trainstack.errors import UserError
from trainstack.spec.loader import load_sweep
from trainstack.sweep import study as studies

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "components" / "mnist-ddp" / "sweeps" / "lr-optimizer.yaml"
UNUSED_UID = 4_000_017  # no account has it


def _give_away(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() == 0:
        os.chown(path, UNUSED_UID, -1)
    else:
        monkeypatch.setattr(statetrust, "owner", lambda: UNUSED_UID)


def _linked_out(path: Path) -> None:
    outside = path.parents[3] / "elsewhere.db"
    path.rename(outside)
    path.symlink_to(outside)


FORGED: dict[str, Callable[[Path, pytest.MonkeyPatch], object]] = {
    "another user's": _give_away,
    "another user's, writable by all": lambda p, m: (p.chmod(0o666), _give_away(p, m)),
    "writable by others": lambda p, m: p.chmod(0o602),
    "a link out of the state home": lambda p, m: _linked_out(p),
    "a group-writable sweep folder": lambda p, m: p.parent.chmod(0o770),
    "a world-writable sweeps folder": lambda p, m: p.parent.parent.chmod(0o777),
    "another user's sweep folder": lambda p, m: _give_away(p.parent, m),
}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("forged", sorted(FORGED))
def test_a_storage_someone_else_could_write_is_refused_and_left(
    forged: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sweep = load_sweep(EXAMPLE)
    directory = studies.sweep_dir(tmp_path / "home", sweep.name)
    with studies.exclusive(directory):
        studies.open_study(sweep, directory).set_user_attr("best", "mine")
    storage = directory / studies.STORAGE_FILE
    FORGED[forged](storage, monkeypatch)
    before = _digest(storage)
    with pytest.raises(UserError, match="the sweep's storage is not used: ") as refused:
        studies.open_study(sweep, directory)
    assert f"mv {directory} {directory}.bad" in str(refused.value.hint)
    with pytest.raises(UserError, match="the sweep's storage is not used: "):
        studies.check_storage(directory)  # what `sweeps list` and `sweeps show` read through
    assert _digest(storage) == before


def test_what_a_sweep_makes_is_the_user_s_alone_whatever_the_umask(tmp_path: Path) -> None:
    sweep = load_sweep(EXAMPLE)
    home = tmp_path / "home"
    directory = studies.sweep_dir(home, sweep.name)
    old = os.umask(0o002)
    try:
        with studies.exclusive(directory):
            studies.open_study(sweep, directory)
    finally:
        os.umask(old)
    for path in (studies.sweeps_root(home), directory, directory / studies.STORAGE_FILE):
        assert path.stat().st_mode & 0o022 == 0, path
    with studies.exclusive(directory):
        studies.open_study(sweep, directory)  # resumed, not refused


def test_sweep_refuses_a_world_writable_storage_in_one_error(tmp_path: Path, cli: Cli) -> None:
    assert cli.home is not None
    spec = hold_project(
        tmp_path,
        {"parameters": {"lr": [0.1]}, "objective": {"metric": "curve/loss", "goal": "minimize"}},
    )
    storage = cli.home / "sweeps" / "hold-sweep" / "optuna.db"
    storage.parent.mkdir(parents=True)
    storage.touch(mode=0o666)
    storage.chmod(0o666)
    for verb in (("sweep", spec, "--local", "--no-install"), ("sweeps", "show", "hold-sweep")):
        done = cli(*verb, timeout=120)
        assert done.code == 2 and "Traceback" not in done.err, (verb, done.err)
        assert done.err.count("error:") == 1, (verb, done.err)
        assert "writable by its group and others (mode 666)" in done.err, (verb, done.err)
        assert "chmod go-w" in done.err, (verb, done.err)
    assert storage.read_bytes() == b""
    assert not (cli.home / "runs").exists(), "a trial started against an untrusted storage"
