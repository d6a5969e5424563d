"""The deploy job's summary says which stack a renamed run left behind, with the command that
ends it: `trainstack deploy` run by the shipped workflow (tests/workflowrun.py) against a backend
that outlives each `pulumi` call (tests/ci/backendstandin.py), holding the run's stack under its
old name."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.ci import backendstandin
from tests.ci.test_ci import git
from tests.ci.test_workflow_jobs import WORKFLOW, project, runner  # noqa: F401
from tests.deploy.test_deploy import PLATFORM_OUTPUTS

pytestmark = pytest.mark.slow  # the workflow replayed with real processes

RUN_FILE = "components/mnist-ddp/runs/local.yaml"  # README's main job: `env: local`
OLD = "local.team-vision.mnist-local"


def test_a_push_that_renames_a_run_reports_the_stack_it_left(
    tmp_path: Path,
    project: Path,  # noqa: F811
) -> None:
    platform = {
        **PLATFORM_OUTPUTS,
        "namespaces": {"vision": "team-vision"},
        "artifactStore": "pvc://trainstack-artifacts/runs/",
    }
    old_tags = {
        "trainstack:run": "mnist-local",
        "trainstack:env": "local",
        "trainstack:namespace": "team-vision",
        "trainstack:team": "vision",
        "trainstack:component": "mnist-ddp",
        "trainstack:experiment": "mnist-baselines",
        "trainstack:file": RUN_FILE,
    }
    state = tmp_path / "backend-standin.json"
    backendstandin.write(tmp_path / "bin", state, {OLD: old_tags}, platform)
    before = git(project, "rev-parse", "HEAD").strip()
    run = project / RUN_FILE
    run.write_text(run.read_text().replace("name: mnist-local\n", "name: mnist-local-v2\n"))
    git(project, "commit", "-q", "-am", "mnist-local is now mnist-local-v2")
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    r = runner(
        tmp_path,
        tmp_path / "bin",
        backend=f"file://{tmp_path}/backend",
        event="push",
        **{"github.event.before": before, "vars.TRAINSTACK_ENV || 'ack-dev'": "local"},
    )
    # the trainstack of this checkout, whichever one the venv's editable install points at
    r = replace(r, env={**r.env, "PYTHONPATH": str(backendstandin.REPO)})
    job = r.run_job(WORKFLOW, "deploy", project, temp)
    step = job.step("Deploy the changed runs")
    assert step.code == 0, step.stdout + step.stderr
    assert f"### {RUN_FILE}" in job.summary
    assert "deployed mnist-local-v2 to local: stack local.team-vision.mnist-local-v2" in (
        job.summary
    )
    notices = [ln for ln in job.summary.splitlines() if ln.startswith("notice:")]
    assert len(notices) == 1, job.summary
    assert f"run mnist-local of team vision (stack {OLD})" in notices[0]
    assert notices[0].endswith(
        "until it is destroyed: trainstack destroy mnist-local --env local --team vision --yes"
    )
