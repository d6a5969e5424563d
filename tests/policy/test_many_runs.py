"""`plan` and `policy check` of several run files in one process, as the shipped workflow calls
them: the platform planned once for all of them, each file checked and planned whatever the one
before it did, a Markdown section per file for the step summary. Before, the workflow started
three processes per run (each planning the platform again), and `plan` took one file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.policy.test_check import REPO, make_run
from trainstack.plan import service


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("runs")
    broken = folder / "broken.yaml"
    broken.write_text("apiVersion: trainstack.dev/v1\nkind: Run\nmetadata: {name: broken}\n")
    return {
        "good": make_run(folder, "good-run"),
        "hub": make_run(folder, "hub-run", image="docker.io/library/python:3.11"),
        "broken": broken,
    }


def test_several_runs_plan_the_platform_once_and_print_a_section_each(
    runs: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    planned: list[str] = []
    real = service.plan_platform

    def counting(env: str, start: Path | None = None) -> object:
        planned.append(env)
        return real(env, start)

    monkeypatch.setattr(service, "plan_platform", counting)
    # A state home of its own: an empty plan cache, so the platform is planned here, once.
    done = Cli(tmp_path / "home")(
        "plan", "--env", "ack-dev", "--format", "github", "--project", REPO,
        "--", runs["good"], runs["hub"], timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert planned == ["ack-dev"]  # once, for both runs
    sections = done.stdout.split("### ")[1:]
    assert [s.splitlines()[0] for s in sections] == [str(runs["good"]), str(runs["hub"])]
    good, hub = sections
    assert "stack ack-dev.vision.good-run" in good and "no violations" in good
    assert "stack ack-dev.vision.hub-run" in hub and "1 mandatory" in hub
    for section in sections:
        body = section.split("\n\n", 1)[1]
        assert body.startswith("```") and body.rstrip().endswith("```"), body[-200:]


def test_a_run_that_cannot_be_planned_is_reported_and_the_others_are_planned(
    runs: dict[str, Path],
) -> None:
    files = (runs["good"], runs["broken"], runs["hub"])
    done = Cli()(
        "plan", "--env", "ack-dev", "--format", "github", "--project", REPO, *files, timeout=300
    )
    assert done.returncode == 2
    heads = [s.splitlines()[0] for s in done.stdout.split("### ")[1:]]
    assert heads == [str(f) for f in files]
    broken = done.stdout.split(f"### {runs['broken']}")[1].split("### ")[0]
    assert "error: " in broken and "spec" in broken
    assert "stack ack-dev.vision.hub-run" in done.stdout  # planned after the broken one
    text = Cli()("plan", "--env", "ack-dev", "--project", REPO, *files, timeout=300)
    assert text.returncode == 2
    assert f"{runs['hub']}:\n" in text.stdout and "stack ack-dev.vision.hub-run" in text.stdout
    assert text.stderr.count("error: ") == 1, text.stderr


def test_json_of_several_runs_is_a_list_of_files_with_their_plan_or_error(
    runs: dict[str, Path],
) -> None:
    done = Cli()(
        "plan", "--env", "ack-dev", "--format", "json", "--project", REPO,
        runs["good"], runs["broken"], timeout=300,
    )  # fmt: skip
    assert done.returncode == 2
    good, broken = json.loads(done.stdout)
    assert good["file"] == str(runs["good"]) and good["plan"]["kind"] == "run"
    assert broken["file"] == str(runs["broken"]) and "error" in broken and "plan" not in broken
    one = Cli()("plan", "--env", "ack-dev", "--json", "--project", REPO, runs["good"], timeout=300)
    assert json.loads(one.stdout)["kind"] == "run"  # one file: its document, as before


def test_policy_check_of_several_runs_annotates_each_and_goes_on_past_an_error(
    runs: dict[str, Path],
) -> None:
    files = (runs["broken"], runs["hub"], runs["good"])
    done = Cli()(
        "policy", "check", "--env", "ack-dev", "--format", "github", "--project", REPO, *files,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr  # a file not checked outranks a violation (1)
    lines = done.stdout.splitlines()
    assert any(
        ln.startswith(f"::error file={runs['hub']},title=allowed-registries::") for ln in lines
    ), lines
    assert any(
        ln.startswith(f"::error file={runs['broken']},title=not checked::") for ln in lines
    ), lines
    assert f"error: {runs['broken']}: " in done.stderr


def test_a_fence_is_longer_than_any_backticks_in_the_text() -> None:
    from trainstack.plan.report import markdown_section

    section = markdown_section("r.yaml", "command: echo ````x````\n")
    assert section.startswith("### r.yaml\n\n`````\n") and section.endswith("\n`````\n\n")
    assert markdown_section("r.yaml", "plain").count("```") == 2
