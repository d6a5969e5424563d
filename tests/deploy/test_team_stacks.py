"""A run stack is one team's run. At 171490d stacks were ``<env>.<run>``, so two
teams' runs with one ``metadata.name`` shared a stack: the second deploy switched the provider to
the other team's credentials and deleted the first team's job. Stacks are now
``<env>.<namespace>.<run>``; a deploy onto a stack whose namespace or team tag differs is refused;
a stack named the old way is still found (and deployed onto) by the run of its own namespace."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.clirunner import Cli
from tests.deploy.test_deploy import MANIFESTS, RUN_FILE, RecordingPulumi, home  # noqa: F401
from trainstack.errors import UserError
from trainstack.spec import load_run

REPO = Path(__file__).resolve().parents[2]
VISION = "local.vision.mnist-baseline-01"
LEGACY = "local.mnist-baseline-01"


def team_run(tmp: Path, team: str) -> Path:
    """mnist-local as team ``team`` writes it: the same run name as the other team's."""
    text = (REPO / "components/mnist-ddp/runs/local.yaml").read_text()
    text = text.replace("team: vision", f"team: {team}").replace(
        "component: ../component.yaml",
        f"component: {REPO / 'components/mnist-ddp/component.yaml'}",
    )
    path = tmp / team / "local.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


def test_plan_of_two_teams_runs_with_one_name_shows_two_stacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    stacks = []
    for team in ("vision", "nlp"):
        done = Cli().invoke("plan", str(team_run(tmp_path, team)), "--env", "local", "--json")
        assert done.code == 0, done.output
        doc = json.loads(done.out)
        stacks.append(doc["stack"])
    assert stacks == ["local.vision.mnist-local", "local.nlp.mnist-local"]


def for_team(namespace: str) -> list[dict[str, Any]]:
    manifests = copy.deepcopy(MANIFESTS)
    for m in manifests:
        m["metadata"]["namespace"] = namespace
    return manifests


def deploy_as(cli: RecordingPulumi, home: Path, team: str) -> Any:  # noqa: F811
    from dataclasses import replace

    from trainstack.deploy.service import deploy_run
    from trainstack.spec.model import FrozenMap

    run = load_run(RUN_FILE)
    run = replace(run, tags=FrozenMap({**run.tags, "team": team}))
    return deploy_run(run, for_team(team), "local", command=cli, home=home)


def test_two_teams_deploy_one_run_name_into_two_stacks(home: Path) -> None:  # noqa: F811
    from trainstack.deploy.index import RunIndex
    from trainstack.deploy.service import locate

    cli = RecordingPulumi()
    vision = deploy_as(cli, home, "vision")
    cli.calls.clear()
    nlp = deploy_as(cli, home, "nlp")
    assert (vision.stack, nlp.stack) == (VISION, "local.nlp.mnist-baseline-01")
    ups = [c[c.index("--stack") + 1] for c in cli.calls if c[0] == "up"]
    assert ups == ["local.nlp.mnist-baseline-01"], "the first team's stack is not touched"
    assert cli.tags[VISION]["trainstack:namespace"] == "vision"
    assert {e.stack for e in RunIndex(home).entries()} == {VISION, nlp.stack}
    # both are found; a name two teams use needs the team
    with pytest.raises(UserError) as caught:
        locate("mnist-baseline-01", command=cli, home=home)
    assert "several teams" in caught.value.message and "--team" in (caught.value.hint or "")
    assert locate("mnist-baseline-01", team="nlp", command=cli, home=home).entry.stack == nlp.stack


def test_a_deploy_onto_a_stack_of_another_team_is_refused(home: Path) -> None:  # noqa: F811
    cli = RecordingPulumi(stacks={VISION})
    cli.tags[VISION] = {
        "trainstack:run": "mnist-baseline-01",
        "trainstack:env": "local",
        "trainstack:team": "nlp",
        "trainstack:namespace": "nlp",
    }
    with pytest.raises(UserError) as caught:
        deploy_as(cli, home, "vision")
    assert "belongs to team nlp (namespace nlp)" in caught.value.message
    assert not any(c[0] == "up" for c in cli.calls), "nothing deployed"
    assert cli.tags[VISION]["trainstack:namespace"] == "nlp", "its tags are left as they were"


def test_a_stack_named_before_the_team_was_in_the_name_is_still_used(
    home: Path,  # noqa: F811
) -> None:
    cli = RecordingPulumi(stacks={LEGACY})
    cli.tags[LEGACY] = {
        "trainstack:run": "mnist-baseline-01",
        "trainstack:env": "local",
        "trainstack:namespace": "vision",
    }
    said: list[str] = []
    from trainstack.deploy.service import deploy_run

    entry = deploy_run(
        load_run(RUN_FILE), MANIFESTS, "local", command=cli, home=home, on_output=said.append
    )
    assert entry.stack == LEGACY
    assert not any(c[:2] == ["stack", "init"] and "." in c[2] for c in cli.calls), "no run stack"
    assert any("named before stacks carried the team" in line for line in said)


def test_another_teams_old_stack_is_left_alone(home: Path) -> None:  # noqa: F811
    cli = RecordingPulumi(stacks={LEGACY})
    cli.tags[LEGACY] = {
        "trainstack:run": "mnist-baseline-01",
        "trainstack:env": "local",
        "trainstack:namespace": "nlp",
    }
    entry = deploy_as(cli, home, "vision")
    assert entry.stack == VISION
    ups = [c[c.index("--stack") + 1] for c in cli.calls if c[0] == "up"]
    assert ups == [VISION]


def test_status_and_destroy_take_the_team(
    home: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import trainstack.deploy.workspace as workspace

    cli = RecordingPulumi()
    deploy_as(cli, home, "vision")
    deploy_as(cli, home, "nlp")
    monkeypatch.setattr(workspace, "find_pulumi", lambda: cli)
    done = Cli().invoke("status", "mnist-baseline-01", "--no-live", "--home", str(home))
    assert done.code == 2 and "deployed by several teams in local (nlp, vision)" in done.err
    assert "Traceback" not in done.err
    done = Cli().invoke(
        "status", "mnist-baseline-01", "--team", "nlp", "--no-live", "--home", str(home)
    )
    assert done.code == 0, done.err
    assert "stack local.nlp.mnist-baseline-01" in done.out
    done = Cli().invoke(
        "destroy", "mnist-baseline-01", "--team", "vision", "--yes", "--home", str(home)
    )
    assert done.code == 0, done.err
    assert VISION not in cli.stacks and "local.nlp.mnist-baseline-01" in cli.stacks
