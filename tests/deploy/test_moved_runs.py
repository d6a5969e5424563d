"""A run renamed, or moved to another team, gets a new stack (``<env>.<namespace>.<run>``); the old
one's job goes on running and counting against its team's quota. Deploy says so, with the command
that ends it, found through the backend's one listing (deploy/moved.py), against the recording
stand-in of the CLI; a redeploy of the same stack says nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.clirunner import Cli
from tests.deploy.test_cluster import api, kubeconfig  # noqa: F401
from tests.deploy.test_deploy import PLATFORM_OUTPUTS, RUN_FILE, RecordingPulumi, home  # noqa: F401

COMPONENT = RUN_FILE.parent.parent / "component.yaml"
JOBS = "/apis/training.kubedl.io/v1alpha1/namespaces/team-{team}/pytorchjobs/{run}"
RUN = "mnist-baseline-01"


def platform(url: str) -> dict[str, Any]:
    return {
        **PLATFORM_OUTPUTS,
        "kubeconfig": kubeconfig(url),
        "kubeContext": "recorded",
        "namespaces": {"vision": "team-vision", "nlp": "team-nlp"},
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A clone holding the run file (as CI's checkout and every teammate's clone do)."""
    root = tmp_path / "clone"
    (root / ".git").mkdir(parents=True)
    (root / "runs").mkdir()
    return root


def write_run(repo: Path, *, name: str = RUN, team: str = "vision") -> Path:
    text = RUN_FILE.read_text().replace("../component.yaml", str(COMPONENT))
    text = text.replace(f"name: {RUN}", f"name: {name}").replace("team: vision", f"team: {team}")
    path = repo / "runs" / "baseline.yaml"
    path.write_text(text)
    return path


def deploy(cli: RecordingPulumi, home: Path, run_file: Path, *more: str) -> Any:  # noqa: F811
    done = Cli().invoke(
        "deploy", str(run_file), "--env", "local", "--quiet", "--home", str(home), *more
    )
    assert done.code == 0, done.output
    return done


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, api: Any) -> RecordingPulumi:  # noqa: F811
    import trainstack.deploy.workspace as workspace

    backend = RecordingPulumi(platform=platform(api.url))
    monkeypatch.setattr(workspace, "find_pulumi", lambda: backend)
    return backend


def destroy_line(run: str, team: str) -> str:
    return f"trainstack destroy {run} --env local --team {team} --yes"


def test_a_renamed_run_says_the_old_stack_still_runs_and_how_to_end_it(
    home: Path,  # noqa: F811
    repo: Path,
    cli: RecordingPulumi,
) -> None:
    deploy(cli, home, write_run(repo))
    assert cli.tags[f"local.team-vision.{RUN}"]["trainstack:file"] == "runs/baseline.yaml"
    cli.calls.clear()
    done = deploy(cli, home, write_run(repo, name="mnist-baseline-02"))
    (line,) = [ln for ln in done.err.splitlines() if ln.startswith("notice:")]
    assert line == (
        f"notice: run {RUN} of team vision (stack local.team-vision.{RUN}) was deployed from "
        "this run file and is still deployed: a rename or a team change leaves it, and its job "
        "runs on, counting against vision's quota, until it is destroyed: "
        + destroy_line(RUN, "vision")
    )
    assert f"local.team-vision.{RUN}" in cli.stacks, "nothing is destroyed by itself"
    # the lookup is the backend's one listing: `stack ls` and one read of the run index
    assert cli.verbs()[2:4] == ["stack ls", "stack output"]


def test_a_run_moved_to_another_team_says_the_old_team_s_stack_still_runs(
    home: Path,  # noqa: F811
    repo: Path,
    cli: RecordingPulumi,
) -> None:
    deploy(cli, home, write_run(repo))
    done = deploy(cli, home, write_run(repo, team="nlp"))
    (line,) = [ln for ln in done.err.splitlines() if ln.startswith("notice:")]
    assert f"(stack local.team-vision.{RUN})" in line
    assert "counting against vision's quota" in line
    assert line.endswith(destroy_line(RUN, "vision"))
    assert {f"local.team-vision.{RUN}", f"local.team-nlp.{RUN}"} <= cli.stacks


def test_a_plain_redeploy_says_nothing_of_its_own_stack(
    home: Path,  # noqa: F811
    repo: Path,
    cli: RecordingPulumi,
    api: Any,  # noqa: F811
) -> None:
    api.serve(JOBS.format(team="vision", run=RUN), (200, b'{"metadata": {"name": "x"}}'))
    run_file = write_run(repo)
    deploy(cli, home, run_file)
    cli.calls.clear()
    again = deploy(cli, home, run_file)
    assert "stack ls" in cli.verbs(), "it looked, and found only its own stack"
    assert "notice:" not in again.err


def test_an_older_stack_is_matched_by_component_and_experiment_on_a_new_stack_only(
    home: Path,  # noqa: F811
    repo: Path,
    cli: RecordingPulumi,
    api: Any,  # noqa: F811
) -> None:
    """A stack deployed before stacks recorded their run file has no `file` tag: the same
    component and experiment stand in, said with an "if", and only when this deploy creates its
    stack (a rename or a team change always does)."""
    old = "local.team-vision.mnist-older"
    cli.stacks.add(old)
    cli.tags[old] = {
        "trainstack:run": "mnist-older",
        "trainstack:env": "local",
        "trainstack:namespace": "team-vision",
        "trainstack:team": "vision",
        "trainstack:component": "mnist-ddp",
        "trainstack:experiment": "mnist-baselines",
    }
    run_file = write_run(repo)
    first = deploy(cli, home, run_file)
    (line,) = [ln for ln in first.err.splitlines() if ln.startswith("notice:")]
    assert "of the same component and experiment" in line and "if this run replaces it" in line
    assert line.endswith(destroy_line("mnist-older", "vision"))
    api.serve(JOBS.format(team="vision", run=RUN), (200, b'{"metadata": {"name": "x"}}'))
    assert "notice:" not in deploy(cli, home, run_file).err, "said once, not on every redeploy"


def test_a_sweep_s_trials_do_not_look(
    home: Path,  # noqa: F811
    repo: Path,
    cli: RecordingPulumi,
) -> None:
    """Trials are runs of one sweep by design: each deploy of one skips the lookup."""
    from trainstack.deploy.service import deploy as deploy_file

    deploy(cli, home, write_run(repo))
    cli.calls.clear()
    said: list[str] = []
    deploy_file(
        write_run(repo, name="mnist-sweep-t001"),
        "local",
        command=cli,
        home=home,
        on_notice=said.append,
        look_for_moved=False,
    )
    assert said == []
    assert "stack ls" not in cli.verbs()


def test_the_file_is_named_as_in_its_repository(tmp_path: Path) -> None:
    from trainstack.deploy.moved import file_tag

    clone = tmp_path / "ci" / "checkout"
    (clone / ".git").mkdir(parents=True)
    (clone / "components" / "x" / "runs").mkdir(parents=True)
    run = clone / "components" / "x" / "runs" / "a.yaml"
    run.touch()
    assert file_tag(run, None) == "components/x/runs/a.yaml"
    worktree = tmp_path / "wt"
    (worktree / "runs").mkdir(parents=True)
    (worktree / ".git").write_text("gitdir: elsewhere\n")  # a worktree's .git is a file
    (worktree / "runs" / "a.yaml").touch()
    assert file_tag(worktree / "runs" / "a.yaml", None) == "runs/a.yaml"
    loose = tmp_path / "loose"
    (loose / "runs").mkdir(parents=True)
    (loose / "runs" / "a.yaml").touch()
    assert file_tag(loose / "runs" / "a.yaml", loose) == "runs/a.yaml"  # the project's folder
    assert file_tag(loose / "runs" / "a.yaml", None) is None
