"""A trainstack upgrade, or a change of a run's metadata alone, restarts no deployed job.

A run's identity is what its user wrote (trainstack/infra/run/identity.py); what trainstack
renders for it (the launcher's source, labels, templates) is deployed over a running or finished
job only when the user asks: ``deploy --upgrade``. Against the recording stand-in of the CLI
(tests/deploy/test_deploy.py): a job left alone is a deploy without ``up``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.test_deploy import RUN_FILE, STACK, RecordingPulumi, home  # noqa: F401
from trainstack.spec.model import Run

NAMESPACE = "vision"


def rendered(run: Run) -> list[dict[str, Any]]:
    from trainstack.render import RenderOptions, render_run

    return render_run(run, options=RenderOptions(namespace=NAMESPACE, oss_secret="trainstack-oss"))


def deploy(cli: RecordingPulumi, home: Path, run: Run, **flags: Any) -> Any:  # noqa: F811
    from trainstack.deploy.service import deploy_run

    notes: list[str] = []
    entry = deploy_run(
        run, rendered(run), "local", command=cli, home=home, on_output=notes.append, **flags
    )
    return entry, "\n".join(notes)


def ups(cli: RecordingPulumi) -> int:
    return sum(1 for call in cli.calls if call[0] == "up")


def upgrade_trainstack(monkeypatch: pytest.MonkeyPatch) -> None:
    """What an upgrade of trainstack does to every deployed run: one comment line added to the
    launcher, which every job's launcher ConfigMap carries."""
    from trainstack import launcher

    shipped = launcher.program_files()
    name = next(iter(shipped))
    newer = {**shipped, name: shipped[name] + "# a comment\n"}
    monkeypatch.setattr(launcher, "program_files", lambda: newer)


def test_a_newer_launcher_restarts_no_deployed_job(
    home: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trainstack.infra.run.program import manifest_hash
    from trainstack.registry import Registry, RunStatus
    from trainstack.spec import load_run

    run = load_run(RUN_FILE)
    cli = RecordingPulumi()
    first, _ = deploy(cli, home, run)
    upgrade_trainstack(monkeypatch)
    assert manifest_hash(rendered(run)) != first.spec_hash, "trainstack renders it anew"
    cli.calls.clear()
    again, said = deploy(cli, home, run)
    assert ups(cli) == 0, "the next unchanged deploy must not replace the job"
    assert "--upgrade" in said and "left as it is" in said
    assert again.registry_id == first.registry_id
    with Registry.open(home) as registry:
        assert registry.get(first.registry_id).status is RunStatus.RUNNING


def test_upgrade_deploys_the_new_rendering(
    home: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trainstack.spec import load_run

    run = load_run(RUN_FILE)
    cli = RecordingPulumi()
    first, _ = deploy(cli, home, run)
    upgrade_trainstack(monkeypatch)
    cli.calls.clear()
    upgraded, _ = deploy(cli, home, run, upgrade=True)
    assert ups(cli) == 1
    assert upgraded.spec_hash != first.spec_hash and upgraded.registry_id != first.registry_id
    assert upgraded.identity == first.identity, "the same run, rendered anew"


@pytest.mark.parametrize(
    "change",
    [
        {"experiment": "mnist-ablations"},
        {"description": "the baseline, again"},
    ],
    ids=["experiment", "description"],
)
def test_a_metadata_change_restarts_nothing(
    home: Path,  # noqa: F811
    change: dict[str, str],
) -> None:
    from trainstack.infra.run.program import manifest_hash
    from trainstack.spec import load_run

    run = load_run(RUN_FILE)
    cli = RecordingPulumi()
    first, _ = deploy(cli, home, run)
    relabelled = dataclasses.replace(run, **change)
    assert manifest_hash(rendered(relabelled)) != first.spec_hash
    cli.calls.clear()
    again, said = deploy(cli, home, relabelled)
    assert ups(cli) == 0 and again.registry_id == first.registry_id
    assert "metadata" in said


def test_a_parameter_change_still_replaces_the_job(home: Path) -> None:  # noqa: F811
    from trainstack.spec import load_run

    run = load_run(RUN_FILE)
    cli = RecordingPulumi()
    first, _ = deploy(cli, home, run)
    params = type(run.parameters)({**run.parameters, "epochs": 7})
    cli.calls.clear()
    second, _ = deploy(cli, home, dataclasses.replace(run, parameters=params))
    assert ups(cli) == 1 and second.registry_id != first.registry_id


def test_a_stack_deployed_before_identities_is_left_alone(home: Path) -> None:  # noqa: F811
    from trainstack.spec import load_run

    cli = RecordingPulumi(stacks={STACK})
    cli.tags[STACK] = {
        "trainstack:run": "mnist-baseline-01",
        "trainstack:env": "local",
        "trainstack:namespace": NAMESPACE,
        "trainstack:team": "vision",
        "trainstack:specHash": "0123456789abcdef",  # what an older trainstack rendered
    }
    _, said = deploy(cli, home, load_run(RUN_FILE))
    assert ups(cli) == 0
    assert "recorded no identity" in said and "--upgrade" in said


def test_a_held_back_deploy_says_so_even_when_quiet(
    home: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`deploy --quiet` drops the progress, not what a user must read: a deploy that changed
    nothing on the cluster says so (CI's summary is where a deploy is read)."""
    from trainstack.deploy.service import deploy_run
    from trainstack.spec import load_run

    run = load_run(RUN_FILE)
    cli = RecordingPulumi()
    deploy(cli, home, run)
    upgrade_trainstack(monkeypatch)
    notices: list[str] = []
    deploy_run(run, rendered(run), "local", command=cli, home=home, on_notice=notices.append)
    assert len(notices) == 1 and "left as it is" in notices[0]
