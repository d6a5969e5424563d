"""`trainstack gc`: a team's runs that ended more than N days ago lose their stacks; nothing else.

Each finished run's stack kept its PVs, claims and ConfigMaps for good. gc destroys the stacks of
one team's runs whose job ended more than the age ago (the platform's `gcAfterDays` unless
`--older-than`), and only those: a running or pending job, or one whose end no one saw, is kept.
The Pulumi CLI is test_deploy's recording stand-in, the cluster test_cluster's recorded API.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.clirunner import Cli
from tests.deploy.test_cluster import NS, RecordedAPI, api, kubeconfig  # noqa: F401
from tests.deploy.test_deploy import PLATFORM, RecordingPulumi

NOW = datetime.now(UTC)
JOBS = f"/apis/training.kubedl.io/v1alpha1/namespaces/{NS}/pytorchjobs/"


def job(name: str, condition: str, days_ago: float) -> tuple[int, bytes]:
    since = (NOW - timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = [{"type": "Created", "status": "True", "lastTransitionTime": since}]
    conditions.append({"type": condition, "status": "True", "lastTransitionTime": since})
    body = {
        "apiVersion": "training.kubedl.io/v1alpha1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": NS},
        "status": {"conditions": conditions},
    }
    return 200, json.dumps(body).encode()


def stack_tags(run: str, namespace: str = NS, **more: str) -> dict[str, str]:
    return {
        "trainstack:run": run,
        "trainstack:env": "local",
        "trainstack:team": "vision" if namespace == NS else "nlp",
        "trainstack:namespace": namespace,
        "trainstack:job": run,
        "trainstack:kind": "PyTorchJob",
        "trainstack:apiVersion": "training.kubedl.io/v1alpha1",
        "trainstack:source": PLATFORM,
        "trainstack:specHash": f"digest-of-{run}",
        **{f"trainstack:{k}": v for k, v in more.items()},
    }


def remembered(run: str, days_ago: float, digest: str | None = None) -> str:
    when = (NOW - timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{when} {digest or f'digest-of-{run}'}"


@pytest.fixture
def backend(api: RecordedAPI) -> RecordingPulumi:  # noqa: F811
    """Team vision's runs in every state, and an old one of team nlp."""
    platform = {
        "mode": "kubeconfig",
        "kubeconfig": kubeconfig(api.url),
        "namespaces": {"vision": NS, "nlp": "team-nlp"},
        "gcAfterDays": 7,
    }
    cli = RecordingPulumi(platform=platform)
    runs = {
        "old-done": stack_tags("old-done"),
        "old-failed": stack_tags("old-failed"),
        "fresh-done": stack_tags("fresh-done"),
        "still-running": stack_tags("still-running"),
        "gone-unseen": stack_tags("gone-unseen"),
        "gone-seen": stack_tags("gone-seen", ended=remembered("gone-seen", 20)),
        # the end of the job before a redeploy: not this job's
        "redeployed": stack_tags("redeployed", ended=remembered("redeployed", 20, "older")),
        "theirs": stack_tags("theirs", "team-nlp"),
    }
    for run, tags in runs.items():
        stack = f"local.{tags['trainstack:namespace']}.{run}"
        cli.stacks.add(stack)
        cli.tags[stack] = tags
    api.serve(JOBS + "old-done", job("old-done", "Succeeded", 30))
    api.serve(JOBS + "old-failed", job("old-failed", "Failed", 8))
    api.serve(JOBS + "fresh-done", job("fresh-done", "Succeeded", 2))
    api.serve(JOBS + "still-running", job("still-running", "Running", 40))
    return cli


def gc(cli: RecordingPulumi, home: Path, *args: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    import trainstack.deploy.workspace as workspace

    monkeypatch.setattr(workspace, "find_pulumi", lambda: cli)
    return Cli().invoke(
        "gc", "--env", "local", "--team", "vision", "--format", "json", *args, "--home", str(home)
    )


def test_dry_run_lists_exactly_the_finished_runs_past_the_age(
    backend: RecordingPulumi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = gc(backend, tmp_path / "home", "--dry-run", monkeypatch=monkeypatch)
    assert done.code == 0, done.err
    verdicts = {v["run"]: v for v in json.loads(done.out)}
    to_destroy = sorted(r for r, v in verdicts.items() if v["action"] == "to destroy")
    assert to_destroy == ["gone-seen", "old-done", "old-failed"]
    assert "theirs" not in verdicts, "another team's run"
    assert verdicts["fresh-done"]["action"] == "kept"
    assert verdicts["still-running"]["state"] == "running"
    assert verdicts["gone-unseen"]["state"] == "unknown"
    assert verdicts["redeployed"]["action"] == "kept"
    assert not any(c[0] == "destroy" or c[:3] == ["stack", "tag", "set"] for c in backend.calls)


def test_gc_destroys_them_remembers_recent_ends_and_is_idempotent(
    backend: RecordingPulumi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = gc(backend, tmp_path / "home", monkeypatch=monkeypatch)
    assert done.code == 0, done.err
    destroyed = sorted(c[c.index("--stack") + 1] for c in backend.calls if c[0] == "destroy")
    assert destroyed == [f"local.{NS}.gone-seen", f"local.{NS}.old-done", f"local.{NS}.old-failed"]
    assert f"local.{NS}.still-running" in backend.stacks
    assert "local.team-nlp.theirs" in backend.stacks
    # fresh-done's end is kept on its stack: KubeDL's TTL may delete the job before it is due
    ended = backend.tags[f"local.{NS}.fresh-done"]["trainstack:ended"]
    assert ended.endswith(" digest-of-fresh-done")
    backend.calls.clear()
    again = gc(backend, tmp_path / "home", monkeypatch=monkeypatch)
    assert again.code == 0, again.err
    assert not any(c[0] == "destroy" for c in backend.calls), "nothing more to do"
    assert {v["action"] for v in json.loads(again.out)} == {"kept"}


def test_older_than_overrides_the_platform_setting(
    backend: RecordingPulumi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = gc(
        backend, tmp_path / "home", "--dry-run", "--older-than", "25", monkeypatch=monkeypatch
    )
    assert done.code == 0, done.err
    assert [v["run"] for v in json.loads(done.out) if v["action"] == "to destroy"] == ["old-done"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--team", "visoin"], "environment 'local' has no team 'visoin'"),
        (["--older-than", "-1"], "--older-than"),
        (["--older-than", "soon"], "--older-than"),
    ],
)
def test_bad_input_is_one_clear_error(
    backend: RecordingPulumi,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    said: str,
) -> None:
    import trainstack.deploy.workspace as workspace

    monkeypatch.setattr(workspace, "find_pulumi", lambda: backend)
    base = ["gc", "--env", "local", "--dry-run", "--home", str(tmp_path / "home")]
    team = [] if "--team" in args else ["--team", "vision"]
    done = Cli().invoke(*base, *team, *args)
    assert done.code == 2, done.output
    assert said in done.err and "Traceback" not in done.err
    assert not any(c[0] == "destroy" for c in backend.calls)


def test_after_gc_the_run_s_logs_and_record_are_still_read(
    api: RecordedAPI,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run of this user's whose job is gone: its registry record says when it ended."""
    from tests.deploy.test_deploy import deploy, policy_project
    from tests.deploy.test_logs_after_destroy import ShippingPulumi
    from tests.deploy.test_logs_after_pods import _ship
    from trainstack.registry import Registry, ReplicaExit, RunStatus

    home = tmp_path / "home"
    monkeypatch.setenv("TRAINSTACK_HOME", str(home))
    monkeypatch.setenv("TRAINSTACK_PROJECT", str(policy_project(tmp_path / "p", "advisory")))
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.delenv("TRAINSTACK_BACKEND_URL", raising=False)
    cli = ShippingPulumi(platform={"mode": "kubeconfig", "kubeconfig": kubeconfig(api.url)})
    entry = deploy(cli, home)
    with Registry.open(home) as registry:
        registry.finish(entry.registry_id, RunStatus.SUCCEEDED, exits=[ReplicaExit("master", 0, 0)])
    store = tmp_path / "claim"
    _ship(store / "runs/vision/mnist-baseline-01/logs", "master", 0, "echo 'epoch 1 loss 0.9'")
    done = gc(cli, home, "--older-than", "0", monkeypatch=monkeypatch)
    assert done.code == 0, done.err
    assert [v["action"] for v in json.loads(done.out)] == ["destroyed"]
    assert entry.stack not in cli.stacks
    logs = Cli().invoke("logs", "mnist-baseline-01", "--store", str(store))
    assert (logs.code, logs.out) == (0, "epoch 1 loss 0.9\n"), logs.err
    shown = Cli().invoke("runs", "show", "mnist-baseline-01")
    assert shown.code == 0, shown.err
    assert "succeeded" in shown.out
