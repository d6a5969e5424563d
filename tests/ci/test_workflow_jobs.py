"""The shipped workflow's jobs, run step by step (tests/workflowrun.py) in a temporary repository
with an `origin`: a pull request that bumps properly, one that does not, one that breaks a
policy, with and without a Pulumi backend; a push to main; the nightly drift check.

trainstack is the installed one (this venv's); `pulumi` is a recording stand-in: it answers
`login`, `install`, `preview` and `refresh`, and fails everything else (so `trainstack deploy`,
which needs the real engine, fails the way a broken CLI does).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from tests.ci.test_ci import bump, git, runs_for
from tests.clirunner import Cli
from tests.workflowrun import JobOutcome, Runner, runner_env

pytestmark = pytest.mark.slow  # the workflow replayed with real processes

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / ".github" / "workflows" / "trainstack.yml"
ENV = "ack-dev"

ACTIONS = {
    "actions/checkout@v4": "the temporary repository is the checkout (full history, origin)",
    "actions/setup-python@v5": "this test's interpreter and venv are the job's Python",
    "pulumi/actions@v6": "the recording stand-in `pulumi` is on PATH",
}
SKIP = {
    "Install trainstack": "the trainstack under test is installed in this venv already",
}
CONDITIONS = {
    "steps.changed.outputs.count != '0'": lambda c: c.outputs["changed"]["count"] != "0",
    "env.PULUMI_BACKEND_URL != ''": lambda c: c.env["PULUMI_BACKEND_URL"] != "",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A team's repository: three components, the platform project, the policy pack; `main` is
    pushed to a bare `origin`, and a branch `feature` is checked out."""
    root = tmp_path / "repo"
    for name in ("mnist-ddp", "credit-xgb", "census-tf"):
        shutil.copytree(
            REPO / "components" / name,
            root / "components" / name,
            ignore=shutil.ignore_patterns("__pycache__", "sample"),
        )
    for name in ("Pulumi.yaml", f"Pulumi.{ENV}.yaml", "Pulumi.local.yaml", "requirements.txt"):
        shutil.copy2(REPO / name, root / name)
    for folder in ("policies", "infra", "platform"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(tmp_path, "clone", "-q", "--bare", str(root), str(tmp_path / "origin.git"))
    git(root, "remote", "add", "origin", str(tmp_path / "origin.git"))
    git(root, "fetch", "-q", "origin")
    git(root, "checkout", "-q", "-b", "feature")
    return root


@pytest.fixture
def stand_in(tmp_path: Path) -> tuple[Path, Path]:
    """(the folder holding the stand-in `pulumi`, its log: one line per call with the folder it
    ran in, its arguments and the policy context it was given)."""
    folder, log = tmp_path / "bin", tmp_path / "pulumi-calls.log"
    folder.mkdir()
    exe = folder / "pulumi"
    exe.write_text(
        "#!/bin/sh\n"
        "printf '%s|%s|%s\\n' "
        f'"${{PWD##*/}}" "$*" "${{TRAINSTACK_POLICY_CONTEXT:-}}" >> \'{log}\'\n'
        'case "$1" in\n'
        '  login|install|preview|refresh) echo "stand-in: $1 done"; exit 0 ;;\n'
        "  *) echo \"error: the stand-in has no engine for '$1'\" >&2; exit 255 ;;\n"
        "esac\n"
    )
    exe.chmod(0o755)
    return folder, log


def release(component: Path) -> str:
    """Bump the component's minor version, and move the runs that pin it to the new one."""
    version = str(yaml.safe_load((component / "component.yaml").read_text())["metadata"]["version"])
    major, minor, _ = version.split(".")
    new = f"{major}.{int(minor) + 1}.0"
    bump(component, new)
    for run in (component / "runs").glob("*.yaml"):
        pinned = f"{component.name}@{version}"
        run.write_text(run.read_text().replace(pinned, f"{component.name}@{new}"))
    return new


def runner(tmp_path: Path, stand_in: Path, *, backend: str, event: str, **values: str) -> Runner:
    return Runner(
        values={
            "vars.TRAINSTACK_ENV || 'ack-dev'": ENV,
            "vars.PULUMI_BACKEND_URL": backend,
            "secrets.PULUMI_CONFIG_PASSPHRASE": "test-passphrase",
            "secrets.ALICLOUD_ACCESS_KEY": "",
            "secrets.ALICLOUD_SECRET_KEY": "",
            "vars.TRAINSTACK_TEAM": "",
            **values,
        },
        conditions={
            **CONDITIONS,
            "github.event_name == 'pull_request'": lambda c: event == "pull_request",
            "github.event_name == 'push' && vars.PULUMI_BACKEND_URL != ''": lambda c: (
                event == "push" and backend != ""
            ),
            "github.event_name == 'schedule' && vars.PULUMI_BACKEND_URL != ''": lambda c: (
                event == "schedule" and backend != ""
            ),
            "vars.TRAINSTACK_TEAM != ''": lambda c: bool(values.get("vars.TRAINSTACK_TEAM")),
        },
        actions=ACTIONS,
        skip=SKIP,
        env={
            **runner_env(stand_in, Path(sys.executable).parent),
            "TRAINSTACK_HOME": str(tmp_path / "state"),
        },
    )


def pull_request(tmp_path: Path, project: Path, stand_in: Path, backend: str = "") -> JobOutcome:
    temp = tmp_path / "runner-temp"
    temp.mkdir(exist_ok=True)
    r = runner(
        tmp_path, stand_in, backend=backend, event="pull_request", **{"github.base_ref": "main"}
    )
    return r.run_job(WORKFLOW, "check", project, temp)


def push(tmp_path: Path, project: Path, stand_in: Path, before: str) -> tuple[JobOutcome, str]:
    """The deploy job for a push to main whose `before` commit is ``before``; and its backend."""
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    backend = f"file://{tmp_path}/backend"
    r = runner(tmp_path, stand_in, backend=backend, event="push", **{"github.event.before": before})
    return r.run_job(WORKFLOW, "deploy", project, temp), backend


def ran(job: JobOutcome) -> dict[str, int | None]:
    return {s.name: s.code for s in job.steps if s.ran}


def test_a_pull_request_that_bumps_properly_passes_and_is_summarised(
    tmp_path: Path, project: Path, stand_in: tuple[Path, Path]
) -> None:
    mnist = project / "components" / "mnist-ddp"
    with (mnist / "src" / "main.py").open("a") as f:
        f.write("\n# a fix\n")
    bump(mnist, "1.3.0")
    git(project, "commit", "-q", "-am", "mnist-ddp 1.3.0")
    job = pull_request(tmp_path, project, stand_in[0])
    assert ran(job) == {
        "Validate specs (annotations) and the version-bump check": 0,
        "Specs the change touches": 0,
        "Policy check and plan of each changed run": 0,
        "Policy check of the platform": 0,
    }, [(s.name, s.code, s.stderr[-2000:]) for s in job.steps]
    # only the run written for ack-dev: mnist's local run (env: local) and its sweep's base
    # run (no env tag) are validated, never planned here
    assert job.outputs["changed"] == {"count": "1"}
    assert "## trainstack on ack-dev" in job.summary
    assert "### components/mnist-ddp/runs/baseline.yaml" in job.summary
    assert "runs/local.yaml" not in job.summary and "sweep-base" not in job.summary
    assert (
        "stack ack-dev.vision.mnist-baseline" in job.summary
    )  # the plan's heading, in the summary
    assert "PyTorchJob" in job.summary
    # without a backend the Pulumi steps are skipped, and the stand-in was never called
    preview = job.step("Preview the platform with the policy pack")
    assert not preview.ran and preview.why == "if: env.PULUMI_BACKEND_URL != ''"
    assert not stand_in[1].exists()


def test_a_pull_request_that_changes_the_environment_rechecks_every_run_for_it(
    tmp_path: Path, project: Path, stand_in: tuple[Path, Path]
) -> None:
    env = project / f"Pulumi.{ENV}.yaml"
    env.write_text(env.read_text() + "# reviewed\n")
    git(project, "commit", "-q", "-am", "the environment, reviewed")
    job = pull_request(tmp_path, project, stand_in[0])
    step = job.step("Policy check and plan of each changed run")
    assert step.code == 0, step.stdout + step.stderr
    tagged = runs_for(project, ENV)
    assert [ln[4:] for ln in job.summary.splitlines() if ln.startswith("### ")] == tagged


def test_a_pull_request_that_deletes_a_run_file_tells_the_reviewer(
    tmp_path: Path, project: Path, stand_in: tuple[Path, Path]
) -> None:
    gone = project / "components" / "census-tf" / "runs" / "single-gpu.yaml"
    name = yaml.safe_load(gone.read_text())["metadata"]["name"]
    git(project, "rm", "-q", str(gone))
    git(project, "commit", "-q", "-m", "single-gpu is done")
    job = pull_request(tmp_path, project, stand_in[0])
    assert job.step("Specs the change touches").code == 0
    assert job.outputs["changed"] == {"count": "0"}
    assert (
        f"- `{name}`: run file deleted; merging leaves its stack, if deployed: "
        f"`trainstack destroy {name} --env {ENV}`"
    ) in job.summary.splitlines()


def test_an_unbumped_code_change_stops_the_check_at_its_version_line(
    tmp_path: Path, project: Path, stand_in: tuple[Path, Path]
) -> None:
    code = project / "components" / "credit-xgb" / "src" / "train.py"
    code.write_text(code.read_text() + "\n# changed behaviour\n")
    git(project, "commit", "-q", "-am", "credit-xgb: change without a bump")
    job = pull_request(tmp_path, project, stand_in[0])
    validate = job.step("Validate specs (annotations) and the version-bump check")
    assert validate.code == 2
    assert validate.stdout.startswith("::error file=components/credit-xgb/component.yaml,line=")
    assert "title=version-not-bumped::" in validate.stdout
    assert "components/credit-xgb/src/train.py" in validate.stdout
    later = [s for s in job.steps if s.name not in ACTIONS and s.name != "Install trainstack"][1:]
    assert later and all(not s.ran and s.why == "a step before it failed" for s in later)


def test_a_policy_violation_fails_the_check_after_every_run_is_checked_and_planned(
    tmp_path: Path, project: Path, stand_in: tuple[Path, Path]
) -> None:
    census = project / "components" / "census-tf"
    spec = census / "component.yaml"
    text = spec.read_text()
    image = yaml.safe_load(text)["spec"]["image"]
    spec.write_text(text.replace(image, "docker.io/tensorflow/tensorflow:2.15.0"))
    release(census)
    git(project, "commit", "-q", "-am", "census-tf from Docker Hub")
    job = pull_request(tmp_path, project, stand_in[0])
    step = job.step("Policy check and plan of each changed run")
    assert step.code == 1, [(s.name, s.code, s.stdout, s.stderr) for s in job.steps if s.ran]
    runs = (
        "components/census-tf/runs/ps-4-workers.yaml",
        "components/census-tf/runs/single-gpu.yaml",
    )
    for run in runs:
        assert f"### {run}" in job.summary
        # an inline annotation per run, naming the rule
        assert any(
            ln.startswith("::error") and "allowed-registries" in ln and run in ln
            for ln in step.stdout.splitlines()
        ), step.stdout
    assert job.summary.count("stack ack-dev.nlp.census-") == 2  # both planned despite the first
    assert "census-tf/runs/local.yaml" not in job.summary
    assert not job.step("Policy check of the platform").ran


def test_with_a_backend_the_platform_is_previewed_with_the_policy_pack(
    tmp_path: Path, project: Path, stand_in: tuple[Path, Path]
) -> None:
    job = pull_request(tmp_path, project, stand_in[0], backend=f"file://{tmp_path}/backend")
    assert job.outputs["changed"] == {"count": "0"}
    assert not job.step("Policy check and plan of each changed run").ran
    preview = job.step("Preview the platform with the policy pack")
    assert preview.code == 0, preview.stderr
    context = str(tmp_path / "runner-temp" / "policy-context.json")
    calls = stand_in[1].read_text().splitlines()
    assert calls == [
        f"repo|login file://{tmp_path}/backend|",
        "repo|install|",
        "policies|install|",
        f"repo|preview --stack {ENV} --diff --policy-pack policies|{context}",
    ]
    # what the pack reads: the environment's config and platform outputs, written by trainstack
    assert json.loads(Path(context).read_text())["env"] == ENV
    assert "stand-in: preview done" in job.summary


def test_a_push_deploys_each_changed_run_and_fails_when_a_deploy_fails(
    tmp_path: Path, project: Path, stand_in: tuple[Path, Path]
) -> None:
    before = git(project, "rev-parse", "HEAD").strip()
    census = project / "components" / "census-tf"
    with (next((census / "src").rglob("*.py"))).open("a") as f:
        f.write("\n# a fix\n")
    release(census)
    git(project, "commit", "-q", "-am", "census-tf: a fix")
    job, backend = push(tmp_path, project, stand_in[0], before)
    step = job.step("Deploy the changed runs")
    # the stand-in has no engine: each deploy fails as with a broken CLI, each is attempted, and
    # the step fails (a `| tee` without pipefail would have passed it)
    assert step.code == 1, step.stdout + step.stderr
    for run in ("ps-4-workers", "single-gpu"):
        assert f"### components/census-tf/runs/{run}.yaml" in job.summary
    assert job.summary.count("the Pulumi CLI on PATH cannot be used") == 2
    calls = [c.split("|")[1] for c in stand_in[1].read_text().splitlines()]
    assert calls == [f"login {backend}", "version", "version"]


def test_the_push_that_creates_main_deploys_every_run_for_the_environment(
    tmp_path: Path, project: Path, stand_in: tuple[Path, Path]
) -> None:
    """GitHub sends the all-zero id as `before` when a push creates the branch."""
    job, _ = push(tmp_path, project, stand_in[0], "0" * 40)
    step = job.step("Deploy the changed runs")
    assert "error:" not in step.stderr, step.stderr
    tagged = runs_for(project, ENV)
    assert len(tagged) >= 4
    attempted = [ln[4:] for ln in job.summary.splitlines() if ln.startswith("### ")]
    assert attempted == tagged
    # and the version check has nothing to compare: no version existed before
    done = Cli()("validate", "components", "--since", "0" * 40, cwd=project, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_push_that_deletes_a_run_file_reports_it_and_destroys_nothing(
    tmp_path: Path, project: Path, stand_in: tuple[Path, Path]
) -> None:
    before = git(project, "rev-parse", "HEAD").strip()
    gone = project / "components" / "census-tf" / "runs" / "single-gpu.yaml"
    name = yaml.safe_load(gone.read_text())["metadata"]["name"]
    git(project, "rm", "-q", str(gone))
    git(project, "commit", "-q", "-m", "single-gpu is done")
    job, backend = push(tmp_path, project, stand_in[0], before)
    step = job.step("Deploy the changed runs")
    assert step.code == 0, step.stdout + step.stderr
    how = f"trainstack destroy {name} --env {ENV} --yes"
    assert step.stdout.splitlines() == [
        "stand-in: login done",
        f"::warning title=run file deleted::{name}: its stack, if deployed, is left; {how}",
    ]
    calls = [c.split("|")[1] for c in stand_in[1].read_text().splitlines()]
    assert calls == [f"login {backend}"]


def test_the_nightly_drift_check_refreshes_expecting_no_changes(
    tmp_path: Path, project: Path, stand_in: tuple[Path, Path]
) -> None:
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    backend = f"file://{tmp_path}/backend"
    job = runner(tmp_path, stand_in[0], backend=backend, event="schedule").run_job(
        WORKFLOW, "drift", project, temp
    )
    assert ran(job) == {"Drift check of the platform": 0}
    calls = [c.split("|")[1] for c in stand_in[1].read_text().splitlines()]
    assert calls == [
        f"login {backend}",
        "install",
        f"refresh --stack {ENV} --preview-only --expect-no-changes",
    ]
    # no team named: nothing is collected
    assert "Collect finished runs" not in ran(job)
    # and no job but its own runs on a schedule
    for job_id in ("check", "deploy"):
        assert (
            not runner(tmp_path, stand_in[0], backend=backend, event="schedule")
            .run_job(WORKFLOW, job_id, project, temp)
            .ran
        )


def test_the_nightly_job_collects_the_team_s_finished_runs(
    tmp_path: Path, project: Path, stand_in: tuple[Path, Path]
) -> None:
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    backend = f"file://{tmp_path}/backend"
    job = runner(
        tmp_path,
        stand_in[0],
        backend=backend,
        event="schedule",
        **{"vars.TRAINSTACK_TEAM": "vision"},
    ).run_job(WORKFLOW, "drift", project, temp)
    assert "Collect finished runs" in ran(job)
    calls = [c.split("|")[1] for c in stand_in[1].read_text().splitlines()]
    assert f"login {backend}" in calls
    # gc itself needs a backend this stand-in cannot serve: the step fails, and says why
    assert ran(job)["Collect finished runs"] != 0


def test_the_runner_refuses_what_it_does_not_model(tmp_path: Path) -> None:
    workflow = tmp_path / "w.yml"
    workflow.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ github.sha }}\n"
    )
    r = Runner(values={}, conditions={}, actions={}, env=runner_env())
    with pytest.raises(pytest.fail.Exception, match=r"github\.sha"):
        r.run_job(workflow, "a", tmp_path, tmp_path)
    workflow.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: 'false | true'\n      - run: echo unreachable\n"
        "      - run: 'false | true'\n        shell: bash\n"
    )
    job = Runner(values={}, conditions={}, actions={}, env=runner_env()).run_job(
        workflow, "a", tmp_path, tmp_path
    )
    # GitHub's implicit `bash -e` ignores a failure inside a pipeline; an explicit bash does not
    assert [(s.ran, s.code) for s in job.steps] == [(True, 0), (True, 0), (True, 1)]
