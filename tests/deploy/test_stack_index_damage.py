"""A damaged stack index (`stacks.json` in the state home): one clear error in every verb that
reads it, the file left as it was, and never read as empty (the next deploy would replace it and
lose every entry)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.clirunner import Cli
from trainstack import statetrust
from trainstack.deploy.index import INDEX_FILE, RunIndex, StackEntry
from trainstack.errors import UserError

GOOD = {
    "run": "mine",
    "env": "local",
    "stack": "mine-local",
    "project": "trainstack-runs",
    "backend": "file:///x",
    "component": "probe",
    "version": "1.0.0",
    "experiment": None,
    "spec_path": None,
    "registry_id": None,
}


def _text(text: str) -> Callable[[Path], object]:
    return lambda path: path.write_text(text)


def _directory(path: Path) -> None:
    (path / "inside").mkdir(parents=True)


def _loop(path: Path) -> None:
    path.symlink_to(path.name + ".other")
    (path.parent / (path.name + ".other")).symlink_to(path.name)


def _fifo(path: Path) -> None:
    os.mkfifo(path)


DAMAGE: dict[str, tuple[Callable[[Path], object], str]] = {
    "not-utf8": (lambda p: p.write_bytes(b'{"local/mine": \xff}'), "not UTF-8 text (byte 15)"),
    "bad-json": (_text('{\n  "local/mine": {,\n}'), "stacks.json:2:18: the run index is damaged"),
    "a-list": (_text("[1, 2]"), "expected a JSON object of runs, found a list"),
    "entry-not-object": (_text('{"local/mine": 5}'), "local/mine: expected an object"),
    "entry-missing-field": (
        _text(json.dumps({"local/mine": {k: v for k, v in GOOD.items() if k != "stack"}})),
        "local/mine: stack: missing",
    ),
    "entry-wrong-type": (
        _text(json.dumps({"local/mine": {**GOOD, "outputs": [1]}})),
        "local/mine: outputs: expected an object, found a list",
    ),
    # what a crash or a hostile hand can leave: json recurses once per level
    "nested-deep": (
        _text('{"local/mine": ' + "[" * 200_000 + "]" * 200_000 + "}"),
        "not valid JSON: nested deeper than",
    ),
    "directory": (_directory, "cannot be read: a directory, not a file"),
    "fifo": (_fifo, "cannot be read: a FIFO, not a file"),
    "symlink-loop": (_loop, "the run index is not used: a link"),
}


def _fingerprint(path: Path) -> str:
    if path.is_symlink() or path.is_fifo():
        return f"link:{os.readlink(path)}" if path.is_symlink() else "fifo"
    if path.is_dir():
        return "dir:" + ",".join(sorted(p.name for p in path.iterdir()))
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_every_verb_that_reads_the_index_gives_one_clear_error(damage: str, cli: Cli) -> None:
    assert cli.home is not None
    cli.home.mkdir()
    path = cli.home / INDEX_FILE
    make, message = DAMAGE[damage]
    make(path)
    before = _fingerprint(path)
    for verb in (
        ("status", "mine"),
        ("wait", "mine"),
        ("destroy", "mine", "--yes"),
        ("logs", "mine"),
    ):
        done = cli(*verb, timeout=60)
        out = done.out + done.err
        assert done.code == 2, (verb, out)
        assert "Traceback" not in out, (verb, out)
        assert out.count("error:") == 1 and message in done.err, (verb, out)
        assert "mv " in done.err and str(path) in done.err, (verb, out)
    assert _fingerprint(path) == before, "the index was changed"


def test_a_damaged_index_is_never_replaced(tmp_path: Path) -> None:
    """What deploy and destroy do with it: refuse, leaving the file, instead of starting over."""
    path = tmp_path / INDEX_FILE
    path.write_text('[{"run": "what a teammate wrote by hand"}]')
    index = RunIndex(tmp_path)
    with pytest.raises(UserError, match="the run index is damaged"):
        index.put(StackEntry(**{**GOOD, "run": "new"}))  # type: ignore[arg-type]
    assert path.read_text() == '[{"run": "what a teammate wrote by hand"}]'


def test_fields_a_newer_trainstack_wrote_are_read_past_and_kept(tmp_path: Path) -> None:
    path = tmp_path / INDEX_FILE
    path.write_text(json.dumps({"local/mine": {**GOOD, "future": {"x": 1}}}))
    index = RunIndex(tmp_path)
    assert index.find("mine").stack == "mine-local"
    other = StackEntry(**{**GOOD, "run": "other", "stack": "other-local"})  # type: ignore[arg-type]
    index.put(other)
    stored = json.loads(path.read_text())
    assert stored["local/mine"]["future"] == {"x": 1}
    assert stored[other.key]["stack"] == "other-local"


UNUSED_UID = 4_000_017  # no account has it


def _give_away(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`path` owned by another user: really, as root (CI); as trainstack sees it, otherwise."""
    if os.geteuid() == 0:
        os.chown(path, UNUSED_UID, -1)
    else:
        monkeypatch.setattr(statetrust, "owner", lambda: UNUSED_UID)


def _linked_out(path: Path) -> None:
    outside = path.parent.parent / "elsewhere.json"
    outside.write_text(path.read_text())
    path.unlink()
    path.symlink_to(outside)


FORGED: dict[str, Callable[[Path, pytest.MonkeyPatch], object]] = {
    "another user's": _give_away,
    "another user's, writable by all": lambda p, m: (p.chmod(0o666), _give_away(p, m)),
    "writable by others": lambda p, m: p.chmod(0o602),
    "writable by its group": lambda p, m: p.chmod(0o660),
    "a link out of the state home": lambda p, m: _linked_out(p),
}


@pytest.mark.parametrize("forged", sorted(FORGED))
def test_an_index_someone_else_could_write_is_refused_and_left(
    forged: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which stack `destroy RUN` destroys rests on the index: one someone else could have
    written is neither believed nor replaced."""
    home = tmp_path / "home"
    home.mkdir()
    path = home / INDEX_FILE
    path.write_text(json.dumps({"local/mine": {**GOOD, "stack": "ack-dev"}}))
    path.chmod(0o600)
    FORGED[forged](path, monkeypatch)
    before = _fingerprint(path)
    index = RunIndex(home)
    with pytest.raises(UserError, match="the run index is not used: ") as refused:
        index.find("mine")
    assert "mv " in str(refused.value.hint)
    with pytest.raises(UserError, match="the run index is not used: "):
        index.put(StackEntry(**{**GOOD, "run": "new"}))  # type: ignore[arg-type]
    assert _fingerprint(path) == before
