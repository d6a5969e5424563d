"""Hints that lead somewhere: each error names a step the user can take with the verb at hand.
Before, `plan` of a file:// run suggested a `--local-cluster` flag plan does not have; `status`
with nothing deployed demanded the Pulumi CLI; `run` without `--local` did not mention `deploy`;
piped `plan` output broke its `pending:` commands mid-line; a YAML error pointed only where the
parser noticed, not where the unclosed `{` opened; an ambiguous run prefix did not list the runs
it matched; `spec.tags` did not say that tags are metadata."""

from __future__ import annotations

from pathlib import Path

from tests.clirunner import Cli
from trainstack.registry import NewRun, Registry, RunKind

REPO = Path(__file__).resolve().parents[2]
CENSUS = REPO / "components/census-tf/runs/local.yaml"


def _text(done: object) -> str:
    return getattr(done, "out", "") + getattr(done, "err", "")


def test_a_file_binding_on_a_shared_cluster_suggests_no_flag_plan_lacks(
    tmp_path: Path, cli: Cli
) -> None:
    run = tmp_path / "run.yaml"
    text = CENSUS.read_text().replace(
        "../component.yaml", str(CENSUS.parents[1] / "component.yaml")
    )
    run.write_text(text.replace("metadata:\n", "metadata:\n  tags: {team: vision}\n", 1))
    assert "file://" in text
    for verb in (("plan",), ("policy", "check")):
        done = cli(*verb, str(run), "--env", "ack-dev")
        assert done.code != 0
        said = _text(done)
        assert "file://" in said and "hostPathVolumes" in said
        assert "render with --local-cluster" not in said


def test_status_with_nothing_deployed_needs_no_pulumi_cli(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    cli = Cli(home, forbid_traceback=True)
    env = {"PATH": "/nonexistent", "TRAINSTACK_BACKEND_URL": ""}
    one = cli("status", "mnist-local", env=env)
    assert one.code == 2 and "no deployed run 'mnist-local'" in one.err
    assert "Pulumi CLI" not in one.err
    every = cli("status", env=env)
    assert every.code == 0 and "no deployed runs" in every.err


def test_run_without_local_names_deploy_too(cli: Cli) -> None:
    done = cli("run", str(REPO / "components/mnist-ddp/runs/local.yaml"))
    assert done.code == 2
    assert "--local" in done.err and "trainstack deploy" in done.err and "--env" in done.err


def test_piped_plan_keeps_each_pending_command_on_its_line(cli: Cli) -> None:
    done = cli("plan", "--env", "ack-dev")
    assert done.code == 0, done.err
    pending = [line for line in done.out.splitlines() if line.startswith("pending:")]
    # each step's command whole on its line, as it is pasted (wrapped at 100 columns before)
    assert any(
        line.endswith(
            "pulumi config set --secret trainstack:registryPassword <password> --stack ack-dev"
        )
        for line in pending
    ), pending
    assert any(
        "pulumi config set kubedl:image <registry>/<namespace>/kubedl@sha256:<digest>" in line
        for line in pending
    ), pending


def test_a_yaml_error_names_where_the_unclosed_brace_opened(tmp_path: Path, cli: Cli) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: trainstack.dev/v1\nkind: Run\nmetadata: {name: x}\nspec:\n"
        "  component: c.yaml\n  parameters: {epochs: 3, lr: 0.1\n  resources:\n"
        "    worker: {replicas: 1}\n"
    )
    done = cli("validate", str(bad))
    assert done.code != 0
    assert "line 6, column 15" in done.out + done.err


def test_spec_tags_says_tags_are_metadata(tmp_path: Path, cli: Cli) -> None:
    component = REPO / "components/mnist-ddp/component.yaml"
    run = tmp_path / "run.yaml"
    run.write_text(
        "apiVersion: trainstack.dev/v1\nkind: Run\nmetadata: {name: x}\nspec:\n"
        f"  component: {component}\n  tags: {{team: vision}}\n"
        "  resources:\n    master: {replicas: 1}\n"
    )
    done = cli("validate", str(run))
    assert "tags belongs under metadata: metadata.tags" in done.out + done.err


def test_an_ambiguous_prefix_lists_the_runs_it_matches(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Registry.open(home) as reg:
        made = [
            reg.create(NewRun(name="job", component="c", component_version="1", kind=RunKind.LOCAL))
            for _ in range(12)
        ]
    ids = sorted(r.id for r in made)
    assert all(i.startswith("job-") for i in ids)
    done = Cli(home, forbid_traceback=True)("runs", "show", "job-")
    assert done.code != 0
    assert "'job-' matches more than one run" in done.err
    assert sum(i in done.err for i in ids) == 10 and done.err.count(" (job)") == 10
    assert ", ..." in done.err
