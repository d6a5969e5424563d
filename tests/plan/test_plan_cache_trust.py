"""The plan cache believes only what the user alone could have written (trainstack/statetrust.py,
trainstack/plan/platformcache.py): an entry owned by another user, writable by others, a link,
or in a folder others can write is a miss, said once on stderr; a forged entry that raises a
team's maxPriority never lets `policy check` pass a run a fresh plan refuses.

These tests hold as root (CI, where "another user" is a real chown to an unused uid) and as an
ordinary user (who cannot give a file away: trainstack is told it runs as another uid, so that
the user's own files are someone else's to it).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.infra.conftest import FAKE_KUBECONFIG, REPO
from tests.policy.test_check import make_run
from trainstack import statetrust
from trainstack.envfile import find_project
from trainstack.errors import ConfigError
from trainstack.plan import platformcache, service
from trainstack.platformnames import OUT_TEAM_MAX_PRIORITY

UNUSED_UID = 4_000_017  # no account has it


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "project"
    root.mkdir()
    for name in ("Pulumi.yaml", "Pulumi.local.yaml", "Pulumi.ack-dev.yaml"):
        shutil.copy(REPO / name, root / name)
    shutil.copytree(REPO / "platform", root / "platform")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(FAKE_KUBECONFIG)
    monkeypatch.setenv("TRAINSTACK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    for name in [n for n in os.environ if n.startswith("PULUMI_CONFIG")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("TRAINSTACK_PLAN_CACHE", raising=False)
    monkeypatch.setattr(statetrust, "_SAID", set())
    platformcache._MEMO.clear()
    yield root
    platformcache._MEMO.clear()


def _give_away(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`path` owned by another user: really, as root; as trainstack sees it, otherwise."""
    if os.geteuid() == 0:
        os.chown(path, UNUSED_UID, -1, follow_symlinks=False)
    else:
        monkeypatch.setattr(statetrust, "owner", lambda: UNUSED_UID)


def _forge(entry: Path, env: str, change: dict[str, object]) -> dict[str, object]:
    """The entry rewritten in place with `change` in its outputs (its key kept: a hit)."""
    doc = json.loads(entry.read_text())
    doc["outputs"] = {**doc["outputs"], **change}
    entry.write_text(json.dumps(doc))
    entry.chmod(0o600)
    return doc


def _elsewhere(entry: Path, tmp_path: Path) -> None:
    """The entry moved out of the state home and linked back."""
    outside = tmp_path / "outside.json"
    shutil.move(entry, outside)
    entry.symlink_to(outside)


def _folder_elsewhere(entry: Path, tmp_path: Path) -> None:
    """The cache's folder moved out of the state home and linked back."""
    cache = entry.parent.parent
    shutil.move(cache, tmp_path / "outside-cache")
    cache.symlink_to(tmp_path / "outside-cache")


TAMPER = {
    "another user's entry": lambda e, t, m: _give_away(e, m),
    "another user's, writable by all": lambda e, t, m: (e.chmod(0o666), _give_away(e, m)),
    "entry writable by others": lambda e, t, m: e.chmod(0o602),
    "entry writable by its group": lambda e, t, m: e.chmod(0o620),
    "a link out of the state home": lambda e, t, m: _elsewhere(e, t),
    "a folder linked out of the state home": lambda e, t, m: _folder_elsewhere(e, t),
    "a world-writable cache folder": lambda e, t, m: e.parent.chmod(0o777),
    "a group-writable folder above it": lambda e, t, m: e.parent.parent.chmod(0o770),
    "another user's cache folder": lambda e, t, m: _give_away(e.parent, m),
}


@pytest.mark.parametrize("tamper", sorted(TAMPER))
def test_an_entry_someone_else_could_write_is_a_miss_said_once(
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tamper: str,
) -> None:
    proj = find_project(project)
    fresh, _ = service.platform_outputs(proj, "local")
    entry = platformcache.entry_path(proj, "local")
    _forge(entry, "local", {"region": "forged-region"})
    TAMPER[tamper](entry, tmp_path, monkeypatch)
    capsys.readouterr()
    for _ in range(2):  # two processes' worth: said the first time only
        platformcache._MEMO.clear()
        assert service.platform_outputs(proj, "local")[0] == fresh
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1, said
    assert said[0].startswith("trainstack: not using the plan cache entry ")
    assert "only files of yours that no one else can write are used" in said[0]


def test_the_user_s_own_entry_is_still_a_hit(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Made under a umask that would leave others write access, the folders and the entry are
    still the user's alone: the second process answers from the cache, silently."""
    proj = find_project(project)
    old = os.umask(0o000)
    try:
        service.platform_outputs(proj, "local")
    finally:
        os.umask(old)
    entry = platformcache.entry_path(proj, "local")
    _forge(entry, "local", {"region": "from-the-cache"})
    platformcache._MEMO.clear()
    assert service.platform_outputs(proj, "local")[0]["region"] == "from-the-cache"
    assert capsys.readouterr().err == ""
    for folder in (entry.parent, entry.parent.parent):
        assert folder.stat().st_mode & 0o077 == 0


def test_nothing_is_filed_into_a_folder_others_can_write(project: Path) -> None:
    proj = find_project(project)
    entry = platformcache.entry_path(proj, "local")
    entry.parent.mkdir(parents=True)
    entry.parent.chmod(0o777)
    service.platform_outputs(proj, "local")
    assert list(entry.parent.iterdir()) == []


def test_a_forged_max_priority_never_passes_policy_check(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nlp's cap is 5 on ack-dev: a run at priority 7 is refused by a fresh plan; an entry of
    another user's raising the cap to 9 changes nothing."""
    from trainstack.policy.check import check_run

    run = make_run(tmp_path / "runs", "eager-run")
    spec = yaml.safe_load(run.read_text())
    spec["metadata"]["tags"]["team"] = "nlp"
    spec["spec"]["priority"] = 7
    run.write_text(yaml.safe_dump(spec))

    def capped() -> str:
        """How the run's priority fares: refused when planned, or by the rule, or passed."""
        try:
            report = check_run(run, "ack-dev", project)
        except ConfigError as err:
            assert "is above the maxPriority of team 'nlp', 5" in str(err)
            return "refused"
        return "refused" if any(v.rule == "priority-cap" for v in report.violations) else "passed"

    assert capped() == "refused"
    entry = platformcache.entry_path(find_project(project), "ack-dev")
    caps = json.loads(entry.read_text())["outputs"][OUT_TEAM_MAX_PRIORITY]
    _forge(entry, "ack-dev", {OUT_TEAM_MAX_PRIORITY: {**caps, "nlp": 9}})
    platformcache._MEMO.clear()
    assert capped() == "passed"  # the premise: an entry that is believed decides
    entry.chmod(0o666)
    _give_away(entry, monkeypatch)
    platformcache._MEMO.clear()
    assert capped() == "refused"


def test_what_is_believed_by_stat_alone() -> None:
    """The rule itself, for owners no test can make without root."""
    me = os.geteuid()

    def st(mode: int, uid: int) -> os.stat_result:
        return os.stat_result((mode, 0, 0, 1, uid, 0, 0, 0, 0, 0))

    assert statetrust.stat_problem(st(0o100600, me), folder=False) is None
    assert statetrust.stat_problem(st(0o040700, me), folder=True) is None
    assert statetrust.stat_problem(st(0o040755, me), folder=True) is None
    other = statetrust.stat_problem(st(0o100600, me + 1), folder=False)
    assert other == f"owned by uid {me + 1}, not by you (uid {me})"
    assert statetrust.stat_problem(st(0o100622, me), folder=False) == (
        "writable by its group and others (mode 622)"
    )
    assert statetrust.stat_problem(st(0o010600, me), folder=False) == "not a regular file"
    assert statetrust.stat_problem(st(0o100700, me), folder=True) == "not a folder"
