"""A sweep's optuna storage (`sweeps/<name>/optuna.db`) damaged or replaced: `sweep`, `sweeps
list` and `sweeps show` give one clear error and leave the file as it was (optuna would raise
from inside SQLAlchemy, or write its tables into whatever SQLite file it found)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.sweep.helpers import hold_project


def _garbage(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 40)


def _foreign(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (text)")
    conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.commit()
    conn.close()


def _directory(path: Path) -> None:
    (path / "inside").mkdir(parents=True)


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "garbage": (_garbage, "not a readable SQLite database (file is not a database)"),
    "foreign-sqlite": (_foreign, "an SQLite database, but not an optuna storage"),
    "directory": (_directory, "cannot be read: a directory, not a file"),
}


def _fingerprint(path: Path) -> str:
    if path.is_dir():
        return "dir"
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_storage_is_one_clear_error_and_left_as_it_was(
    damage: str, tmp_path: Path, cli: Cli
) -> None:
    assert cli.home is not None
    spec = hold_project(
        tmp_path,
        {"parameters": {"lr": [0.1]}, "objective": {"metric": "curve/loss", "goal": "minimize"}},
    )
    storage = cli.home / "sweeps" / "hold-sweep" / "optuna.db"
    storage.parent.mkdir(parents=True)
    make, message = DAMAGE[damage]
    make(storage)
    before = _fingerprint(storage)
    verbs: list[tuple[str | Path, ...]] = [("sweep", spec, "--local", "--no-install")]
    if damage != "directory":  # a folder is no sweep storage to list or show
        verbs += [("sweeps", "list"), ("sweeps", "show", "hold-sweep")]
    for verb in verbs:
        done = cli(*verb, timeout=120)
        out = done.out + done.err
        assert done.code == 2, (verb, out)
        assert "Traceback" not in out, (verb, out)
        assert out.count("error:") == 1 and message in done.err, (verb, out)
        assert f"mv {storage.parent} {storage.parent}.bad" in done.err, (verb, out)
    assert _fingerprint(storage) == before, "the storage was changed"
    assert not (cli.home / "runs").exists(), "a trial started against a damaged storage"


def test_an_empty_storage_is_a_sweep_not_started_and_is_not_written_by_reading(
    tmp_path: Path, cli: Cli
) -> None:
    """What a sweep interrupted while creating its storage leaves: the reading verbs say so
    without writing optuna's tables into it."""
    assert cli.home is not None
    storage = cli.home / "sweeps" / "hold-sweep" / "optuna.db"
    storage.parent.mkdir(parents=True)
    storage.touch()
    for verb in (("sweeps", "list"), ("sweeps", "show", "hold-sweep")):
        done = cli(*verb, timeout=60)
        assert done.code == 2 and "Traceback" not in done.err, (verb, done.err)
        assert "holds no sweep named 'hold-sweep'" in done.err, (verb, done.err)
    assert storage.stat().st_size == 0


def test_a_sweep_folder_that_cannot_be_created_is_one_clear_error(tmp_path: Path, cli: Cli) -> None:
    """A read-only state folder, or (here, as for any user) a file where `sweeps/` belongs."""
    assert cli.home is not None
    spec = hold_project(
        tmp_path,
        {"parameters": {"lr": [0.1]}, "objective": {"metric": "curve/loss", "goal": "minimize"}},
    )
    cli.home.mkdir()
    (cli.home / "sweeps").write_text("mine")
    done = cli("sweep", spec, "--local", "--no-install", timeout=120)
    assert done.code == 2 and "Traceback" not in done.err, done.err
    assert f"cannot create the sweep's folder {cli.home / 'sweeps' / 'hold-sweep'}" in done.err
    assert (cli.home / "sweeps").read_text() == "mine"


def test_a_damaged_sweep_does_not_hide_the_others_from_the_list(cli: Cli) -> None:
    """`sweeps list` lists what it can read, then reports the damaged one (exit 2)."""
    import optuna

    from trainstack.sweep import study as studies

    assert cli.home is not None
    good = studies.sweep_dir(cli.home, "good-sweep")
    good.mkdir(parents=True)
    studies.quiet()
    optuna.create_study(
        study_name="good-sweep", storage=studies.storage_url(good), direction="minimize"
    ).set_user_attr("objective", "curve/loss")
    bad = studies.sweep_dir(cli.home, "bad-sweep") / studies.STORAGE_FILE
    bad.parent.mkdir(parents=True)
    _garbage(bad)
    done = cli("sweeps", "list", timeout=60)
    assert done.code == 2, done.out + done.err
    assert "good-sweep" in done.out and "minimize curve/loss" in done.out
    assert done.err.count("error:") == 1 and str(bad) in done.err
    listed = cli("sweeps", "list", "--json", timeout=60)
    assert listed.code == 2
    assert [s["name"] for s in json.loads(listed.out)] == ["good-sweep"]
