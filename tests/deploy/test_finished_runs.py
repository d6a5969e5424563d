"""An unchanged redeploy after KubeDL's TTL deleted the finished job.

``up --refresh`` drops the deleted job from the stack's state and the update creates it again:
training runs a second time over the same outputs, while ``deploy`` said "the run is unchanged".
At 171490d that is what happened. A finished run whose job is gone is a finished run: ``deploy``
says so, with its recorded outcome, and submits it again only with ``--rerun``.

The Pulumi CLI is the recording stand-in of test_deploy; the cluster is the recorded Kubernetes
API of test_cluster (a 404 for the job: it is gone).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.test_cluster import JOB_PATH, NS, RecordedAPI, api, kubeconfig  # noqa: F401
from tests.deploy.test_deploy import RUN_FILE, RecordingPulumi, home  # noqa: F401
from trainstack.spec import load_run

RUN = "mnist-baseline-01"


def manifests() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "training.kubedl.io/v1alpha1",
            "kind": "PyTorchJob",
            "metadata": {"name": RUN, "namespace": NS},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1}}},
        }
    ]


def platform(api: RecordedAPI) -> dict[str, Any]:  # noqa: F811
    return {"mode": "kubeconfig", "kubeconfig": kubeconfig(api.url), "namespaces": {"vision": NS}}


def deploy(cli: RecordingPulumi, home: Path, **kw: Any) -> Any:  # noqa: F811
    from trainstack.deploy.service import deploy_run

    return deploy_run(load_run(RUN_FILE), manifests(), "local", command=cli, home=home, **kw)


def finish(home: Path, registry_id: str, status: str) -> None:  # noqa: F811
    from trainstack.registry import Registry, ReplicaExit, RunStatus

    with Registry.open(home) as registry:
        registry.finish(
            registry_id, RunStatus(status), exits=[ReplicaExit("master", 0, 0)], reason="done"
        )


@pytest.mark.parametrize("outcome", ["succeeded", "failed"])
def test_a_finished_job_deleted_by_its_ttl_is_not_submitted_again(
    home: Path,  # noqa: F811
    api: RecordedAPI,  # noqa: F811
    outcome: str,
) -> None:
    cli = RecordingPulumi(platform=platform(api))
    first = deploy(cli, home)
    finish(home, first.registry_id, outcome)  # what `wait` or `status` recorded
    cli.calls.clear()
    said: list[str] = []
    # the recorded API has no job: KubeDL deleted it ttlSecondsAfterFinished after it ended
    again = deploy(cli, home, on_output=said.append)
    assert not any(c[0] == "up" for c in cli.calls), "nothing is submitted again"
    assert any(p == JOB_PATH for p, _, _ in api.requests), "the cluster was asked"
    text = "\n".join(said)
    assert f"run {RUN!r} already finished ({outcome}: done)" in text
    assert "its job is gone from the cluster" in text and "--rerun" in text
    assert again.registry_id == first.registry_id, "the finished record is the run's record"
    from trainstack.registry import Registry

    with Registry.open(home) as registry:
        (record,) = registry.list()
    assert str(record.status) == outcome


def test_a_gone_job_whose_outcome_was_never_seen_is_not_submitted_either(
    home: Path,  # noqa: F811
    api: RecordedAPI,  # noqa: F811
) -> None:
    cli = RecordingPulumi(platform=platform(api))
    deploy(cli, home)
    cli.calls.clear()
    said: list[str] = []
    deploy(cli, home, on_output=said.append)
    assert not any(c[0] == "up" for c in cli.calls)
    assert any("its job is gone from the cluster" in line for line in said)
    assert any("outcome was not recorded" in line for line in said)


def test_rerun_submits_the_finished_run_again(
    home: Path,  # noqa: F811
    api: RecordedAPI,  # noqa: F811
) -> None:
    cli = RecordingPulumi(platform=platform(api))
    first = deploy(cli, home)
    finish(home, first.registry_id, "succeeded")
    cli.calls.clear()
    again = deploy(cli, home, rerun=True)
    assert any(c[0] == "up" for c in cli.calls)
    assert again.registry_id != first.registry_id


def test_a_job_still_on_the_cluster_is_left_as_it_is(
    home: Path,  # noqa: F811
    api: RecordedAPI,  # noqa: F811
) -> None:
    cli = RecordingPulumi(platform=platform(api))
    api.serve(JOB_PATH, (200, json.dumps({"metadata": {"name": RUN}, "status": {}}).encode()))
    deploy(cli, home)
    cli.calls.clear()
    said: list[str] = []
    deploy(cli, home, on_output=said.append)
    assert any(c[0] == "up" for c in cli.calls), "an up that changes nothing, as before"
    assert "the run is unchanged: its job was left as it is (--rerun submits it again)" in said
