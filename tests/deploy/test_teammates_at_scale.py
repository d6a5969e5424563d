"""A teammate's lookups read the backend in a handful of CLI calls, whatever its number of stacks.

``stack ls --json`` shows no tags, so reading each run stack's tags cost one ``pulumi`` process
per stack: 1,001 for 1,000 stacks. Deploy and destroy keep a copy of every run stack's tags in
the backend's run index (``trainstack-index``); the listing and a teammate's lookup read it once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.deploy.test_deploy import RecordingPulumi, deploy, home  # noqa: F401

STACKS = 300


def tags(i: int, team: str = "vision") -> dict[str, str]:
    run = f"run-{i:04d}"
    return {
        "trainstack:run": run,
        "trainstack:env": "local",
        "trainstack:team": team,
        "trainstack:namespace": team,
        "trainstack:job": run,
        "trainstack:kind": "PyTorchJob",
        "trainstack:apiVersion": "training.kubedl.io/v1alpha1",
        "trainstack:component": "mnist-ddp",
        "trainstack:version": "1.0.0",
    }


def crowded_backend(n: int = STACKS, *, indexed: bool = True) -> RecordingPulumi:
    """A backend holding ``n`` run stacks of two teams, and (``indexed``) the copy of their tags
    that deploy keeps in the index stack, as `stack export` prints it."""
    cli = RecordingPulumi()
    for i in range(n):
        team = ("vision", "nlp")[i % 2]
        stack = f"local.{team}.run-{i:04d}"
        cli.stacks.add(stack)
        cli.tags[stack] = tags(i, team)
    if indexed:
        cli.stacks.add("trainstack-index")
        root = {"type": "pulumi:pulumi:Stack", "outputs": {"runs": dict(cli.tags)}}
        cli.deployments["trainstack-index"] = {"resources": [root]}
    return cli


def test_a_teammate_finds_a_run_among_hundreds_in_a_handful_of_calls(tmp_path: Path) -> None:
    from trainstack.deploy.service import locate

    cli = crowded_backend()
    (tmp_path / "bob").mkdir()  # a teammate who has used trainstack here before
    found = locate("run-0123", command=cli, home=tmp_path / "bob")
    assert (found.entry.stack, found.entry.team) == ("local.nlp.run-0123", "nlp")
    assert found.entry.outputs["kind"] == "PyTorchJob"
    assert len(cli.calls) <= 4, cli.verbs()


def test_status_lists_every_run_in_a_handful_of_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trainstack.deploy.workspace as workspace

    cli = crowded_backend()
    monkeypatch.setattr(workspace, "find_pulumi", lambda: cli)
    done = Cli().invoke("status", "--format", "json", "--home", str(tmp_path / "bob"))
    assert done.code == 0, done.err
    import json

    listed = json.loads(done.out)
    assert len(listed) == STACKS
    assert {e["team"] for e in listed} == {"vision", "nlp"}
    assert len(cli.calls) <= 3, cli.verbs()


def test_a_stack_the_index_lacks_is_read_from_its_own_tags(tmp_path: Path) -> None:
    """A stack deployed by an older trainstack (or whose index write lost a race) is found;
    an index entry whose stack is gone is not listed."""
    from trainstack.deploy.service import deployed

    cli = crowded_backend(4)
    runs = cli.deployments["trainstack-index"]["resources"][0]["outputs"]["runs"]
    del runs["local.vision.run-0002"]
    runs["local.vision.gone"] = {"trainstack:run": "gone", "trainstack:env": "local"}
    listed = deployed(command=cli, home=tmp_path / "bob")
    assert [e.run for e in listed] == ["run-0001", "run-0003", "run-0000", "run-0002"]
    assert cli.verbs().count("stack tag ls") == 1


def test_deploy_and_destroy_keep_the_index(home: Path) -> None:  # noqa: F811
    from trainstack.deploy.service import deployed, destroy

    cli = RecordingPulumi()
    entry = deploy(cli, home)
    runs = cli.deployments["trainstack-index"]["resources"][0]["outputs"]["runs"]
    assert runs[entry.stack] == cli.tags[entry.stack], "the stack's tags, as set"
    cli.calls.clear()
    assert [e.stack for e in deployed(command=cli, home=home)] == [entry.stack]
    assert "stack tag ls" not in cli.verbs()
    destroy(entry.run, command=cli, home=home)
    assert cli.deployments["trainstack-index"]["resources"][0]["outputs"]["runs"] == {}
