"""A damaged run registry: one clear error in every verb that reads it, the file left as it was;
a registry deleted during a run gets the run recorded again."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import wait_for, write_run
from trainstack.registry import NewRun, Registry, RegistryError, RunStatus, current_runner
from trainstack.registry.home import registry_path


def _seed(home: Path, runs: int = 40) -> list[str]:
    """A healthy registry with enough rows to span several pages."""
    with Registry.open(home) as reg:
        ids = [
            reg.create(
                NewRun(
                    name=f"seeded{i}",
                    component="probe",
                    component_version="1.0.0",
                    tags={"note": "x" * 200},
                ),
                current_runner(),
            ).id
            for i in range(runs)
        ]
        for run_id in ids:
            reg.finish(run_id, RunStatus.SUCCEEDED)
    # One file, no WAL beside it: the damage below is to the whole registry.
    conn = sqlite3.connect(registry_path(home))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    return ids


def _truncated(home: Path) -> None:
    path = registry_path(home)
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.truncate(size // 2)


def _garbage(home: Path) -> None:
    registry_path(home).write_bytes(bytes(range(256)) * 40)


def _newer_schema(home: Path) -> None:
    conn = sqlite3.connect(registry_path(home))
    conn.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'x', 0)")
    conn.commit()
    conn.close()


def _directory(home: Path) -> None:
    registry_path(home).unlink()
    (registry_path(home) / "inside").mkdir(parents=True)


def _bad_json_row(home: Path) -> None:
    conn = sqlite3.connect(registry_path(home))
    conn.execute("UPDATE runs SET exits = '[[\"master\", 0' WHERE name = 'seeded3'")
    conn.execute("UPDATE runs SET tags = 'not json' WHERE name = 'seeded7'")
    # json recurses once per nesting level: a RecursionError is no ValueError
    deep = "[" * 200_000 + "]" * 200_000
    conn.execute("UPDATE runs SET parameters = ? WHERE name = 'seeded11'", (deep,))
    conn.commit()
    conn.close()


@contextlib.contextmanager
def _read_only(home: Path) -> Iterator[None]:
    """The state folder read-only for whoever runs trainstack. Root ignores file modes, so as
    root the folder is bind-mounted read-only over itself; otherwise modes do it."""
    if os.geteuid() == 0:
        subprocess.run(["mount", "--bind", str(home), str(home)], check=True)
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(home)], check=True)
            yield
        finally:
            subprocess.run(["umount", str(home)], check=True)
    else:
        modes = {p: p.stat().st_mode for p in (home, registry_path(home))}
        for p in modes:
            p.chmod(0o555 if p.is_dir() else 0o444)
        try:
            yield
        finally:
            for p, mode in modes.items():
                p.chmod(mode)


def _foreign_db(home: Path, script: str) -> None:
    path = registry_path(home)
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(str(path) + suffix).unlink()
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.close()


def _foreign(home: Path) -> None:
    """Another program's database where the registry belongs."""
    _foreign_db(
        home,
        "CREATE TABLE accounts (user TEXT, balance REAL);"
        "INSERT INTO accounts VALUES ('alice', 10);",
    )


def _foreign_runs(home: Path) -> None:
    """A `runs` table that is not trainstack's, and no migrations table."""
    _foreign_db(
        home,
        "CREATE TABLE runs (id INTEGER PRIMARY KEY, score REAL);INSERT INTO runs VALUES (1, 0.5);",
    )


def _missing_column(home: Path) -> None:
    """Trainstack's tables, but `runs` lacks a column its recorded migrations added."""
    conn = sqlite3.connect(registry_path(home))
    conn.execute("ALTER TABLE runs DROP COLUMN parameters")
    conn.commit()
    conn.close()


DAMAGE: dict[str, Callable[[Path], None]] = {
    "foreign": _foreign,
    "foreign-runs": _foreign_runs,
    "missing-column": _missing_column,
    "truncated": _truncated,
    "garbage": _garbage,
    "newer-schema": _newer_schema,
    "directory": _directory,
    "bad-json-row": _bad_json_row,
}


def _verbs(spec: Path, ids: list[str]) -> list[tuple[str, ...]]:
    run = ids[3]
    return [
        ("run", str(spec), "--local", "--no-install"),
        ("runs", "list"),
        ("runs", "show", run),
        ("runs", "compare", ids[3], ids[7]),
        ("logs", run),
        ("metrics", run),
        ("report", run, "-o", "/tmp/never-written-report.html"),
    ]


def _fingerprint(path: Path, rows_only: bool = False) -> str:
    if rows_only:  # a sound file whose rows are damaged: WAL mode may be switched on, no more
        conn = sqlite3.connect(path)
        rows = conn.execute("SELECT * FROM runs ORDER BY id").fetchall()
        conn.close()
        return repr(rows)
    if path.is_dir():
        return "dir:" + ",".join(sorted(p.name for p in path.iterdir()))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _assert_one_clear_error(
    result: subprocess.CompletedProcess[str], verb: tuple[str, ...], path: Path
) -> None:
    out = result.stdout + result.stderr
    assert result.returncode != 0, (verb, out)
    assert "Traceback" not in out, (verb, out)
    assert out.count("error:") == 1, (verb, out)
    assert str(path) in out or "run seeded" in out, (verb, out)


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_every_verb_gives_one_clear_error_and_leaves_the_file(
    damage: str, tmp_path: Path, cli: Cli
) -> None:
    ids = _seed(cli.home)
    spec = write_run(tmp_path, "probe", "quick", parameters={"mode": "quick"})
    DAMAGE[damage](cli.home)
    path = registry_path(cli.home)
    before = _fingerprint(path, damage == "bad-json-row")
    for verb in _verbs(spec, ids):
        if damage == "bad-json-row" and verb[0] == "run":
            continue  # a new run reads no other row (the damaged one is still refused below)
        result = cli(*verb, timeout=120)
        _assert_one_clear_error(result, verb, path)
        assert (
            "mv " in result.stderr
            or "upgrade trainstack" in result.stderr
            or "damaged field" in result.stderr
        ), (verb, result.stderr)
    assert _fingerprint(path, damage == "bad-json-row") == before, "the registry was changed"
    assert not (cli.home / "runs").exists() or not any((cli.home / "runs").iterdir()), (
        "a run started against a damaged registry"
    )


def test_a_bad_row_names_the_run_and_other_rows_still_read(tmp_path: Path, cli: Cli) -> None:
    ids = _seed(cli.home)
    _bad_json_row(cli.home)
    shown = cli("runs", "show", ids[3])
    assert shown.returncode != 0 and "Traceback" not in shown.stderr
    assert f"run {ids[3]} in the run registry has a damaged field" in shown.stderr
    healthy = cli("runs", "show", ids[5])
    assert healthy.returncode == 0, healthy.stderr
    deep = cli("runs", "show", ids[11])
    assert deep.returncode != 0 and "Traceback" not in deep.stderr, deep.stderr
    assert f"run {ids[11]} in the run registry has a damaged field" in deep.stderr


def test_read_only_registry_is_one_clear_error(tmp_path: Path, cli: Cli) -> None:
    ids = _seed(cli.home)
    spec = write_run(tmp_path, "probe", "quick", parameters={"mode": "quick"})
    path = registry_path(cli.home)
    before = _fingerprint(path)
    with _read_only(cli.home):
        for verb in _verbs(spec, ids):
            result = cli(*verb, timeout=120)
            _assert_one_clear_error(result, verb, path)
    assert _fingerprint(path) == before


def test_registry_api_refuses_damage_without_writing(tmp_path: Path) -> None:
    _seed(tmp_path)
    _garbage(tmp_path)
    before = _fingerprint(registry_path(tmp_path))
    with pytest.raises(RegistryError, match="is damaged"):
        Registry.open(tmp_path)
    assert _fingerprint(registry_path(tmp_path)) == before
    assert not Path(str(registry_path(tmp_path)) + "-wal").exists()


@pytest.mark.parametrize("damage", ["foreign", "foreign-runs", "missing-column"])
def test_a_database_that_is_not_trainstacks_is_refused_unwritten(
    damage: str, tmp_path: Path
) -> None:
    """Checked read-only first; no migrations table added, no WAL switched
    on, no table created in somebody else's database."""
    _seed(tmp_path, runs=1)
    DAMAGE[damage](tmp_path)
    path = registry_path(tmp_path)
    before = _fingerprint(path)
    with pytest.raises(RegistryError, match=r"not a trainstack run registry"):
        Registry.open(tmp_path)
    assert _fingerprint(path) == before
    assert not Path(str(path) + "-wal").exists()
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    conn.close()


@pytest.mark.slow
def test_registry_deleted_during_a_run_gets_the_run_back(tmp_path: Path, cli: Cli) -> None:
    gate = tmp_path / "gate"  # the run goes on until the test has done its damage
    spec = write_run(
        tmp_path, "probe", "slowcount", parameters={"mode": "gate", "message": str(gate)}
    )
    proc = cli.start("run", spec, "--local", "--no-install")
    try:
        wait_for(
            "the run to start",
            lambda: (
                any((cli.home / "runs").glob("*/logs/*.log"))
                if (cli.home / "runs").exists()
                else False
            ),
        )
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                Path(str(registry_path(cli.home)) + suffix).unlink()
        gate.touch()
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "registry" in out + err and "recreated" in out + err
    listed = cli("runs", "list")
    assert listed.returncode == 0, listed.stderr
    assert "slowcount" in listed.stdout and "succeeded" in listed.stdout, listed.stdout
    shutil.rmtree(cli.home / "runs", ignore_errors=True)


def test_the_move_aside_command_works_for_a_home_with_spaces(tmp_path: Path) -> None:
    """The hint is a command to paste: a path with a space in it is quoted."""
    home = tmp_path / "my home"
    _seed(home, runs=1)
    _garbage(home)
    done = Cli(home)("runs", "list")
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
    command = done.stderr.split("move it aside (", 1)[1].split(")", 1)[0]
    path = registry_path(home)
    assert shlex.split(command) == ["mv", str(path), f"{path}.bad"], command


@pytest.mark.parametrize("target", ["loop", "nowhere/x"])
def test_a_home_that_is_a_broken_symlink_says_so(target: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    if target == "loop":
        home.symlink_to(tmp_path / "loop")
        (tmp_path / "loop").symlink_to(home)
        why = "Too many levels of symbolic links"
    else:
        home.symlink_to(tmp_path / target)
        why = "No such file or directory"
    spec = write_run(tmp_path / "specs", "probe", "quick", parameters={"mode": "quick"})
    for verb in (("runs", "list"), ("run", str(spec), "--local", "--no-install")):
        done = Cli(home)(*verb)
        assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
        assert f"cannot create the state folder {home}: it is a symbolic link to" in done.stderr
        assert why in done.stderr and "File exists" not in done.stderr, done.stderr
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.slow
def test_registry_replaced_by_a_directory_mid_run_keeps_the_outcome(
    tmp_path: Path, cli: Cli
) -> None:
    """The registry moved aside and a directory put in its place lost the
    run's outcome ("Cannot operate on a closed database"). The run ends as its replicas say,
    the damage is reported, and the end is recorded in the file the run had opened."""
    gate = tmp_path / "gate"  # the run goes on until the test has done its damage
    spec = write_run(
        tmp_path, "probe", "slowcount", parameters={"mode": "gate", "message": str(gate)}
    )
    proc = cli.start("run", spec, "--local", "--no-install")
    path = registry_path(cli.home)
    aside = cli.home / "moved-aside.db"
    try:
        wait_for(
            "the run to start",
            lambda: (
                any((cli.home / "runs").glob("*/logs/*.log"))
                if (cli.home / "runs").exists()
                else False
            ),
        )
        os.rename(path, aside)
        path.mkdir()
        gate.touch()
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in out + err and "closed database" not in out + err
    assert f"the run registry {path} is not a file" in out + err
    assert path.is_dir() and not any(path.iterdir()), "nothing is written into the directory"
    moved_home = tmp_path / "moved-home"
    moved_home.mkdir()
    shutil.copy(aside, registry_path(moved_home))
    with Registry.open(moved_home) as reg:
        (record,) = reg.list()
    assert record.name == "slowcount" and record.status is RunStatus.SUCCEEDED
    shutil.rmtree(cli.home / "runs", ignore_errors=True)


OPEN = "from pathlib import Path\nfrom trainstack.registry import Registry\nRegistry.open"


def test_a_registry_being_created_by_another_process_is_not_foreign(tmp_path: Path) -> None:
    """Four runs started at once on a new state home: one of them used to see the migrations
    table another had committed before its first migration, take the file for a foreign
    database and exit 3. The table and the first migration are one transaction now, and a lone
    empty migrations table (what an older trainstack leaves visible mid-creation) is new."""
    from trainstack.registry import Registry

    home = tmp_path / "mid-creation"
    home.mkdir()
    db = sqlite3.connect(home / "registry.db")
    db.execute(
        "CREATE TABLE schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
    )
    db.commit()
    db.close()
    with Registry.open(home) as reg:
        assert reg.list() == []
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", f"{OPEN}(Path({str(tmp_path / 'race')!r})).close()"],
            stderr=subprocess.PIPE,
        )
        for _ in range(6)
    ]
    for racer in racers:
        _, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err.decode()
