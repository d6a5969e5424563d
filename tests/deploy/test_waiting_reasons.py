"""Why a deployed run waits, as the cluster says it — the scheduler's
PodScheduled=False reason and message, an image that cannot be pulled, a quota refusal (the job
controller's FailedCreatePod event: KubeDL v0.5.0 pkg/job_controller/pod_control.go:167), the
gang scheduler's PodGroup condition — in `status`, `wait`'s progress line and the registry's
reason. Before this, such a run showed only "pending".

Against the recorded-response server of test_cluster, through the real ``kubernetes`` client.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tests.deploy.test_cluster as recorded
from tests.deploy.test_cluster import (
    JOB_PATH,
    NS,
    PODS_PATH,
    PlatformCLI,
    RecordedAPI,
    cli_exit,
    deployed,
    registry_record,
)

# test_cluster's fixtures: the recorded-response server, the stand-in CLI, the state home.
api, cli, home = recorded.api, recorded.cli, recorded.home

EVENTS_PATH = f"/api/v1/namespaces/{NS}/events"
PODGROUP_PATH = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{NS}/podgroups/mnist-baseline-01"
UNSCHEDULABLE = "0/3 nodes are available: 1 node(s) had untolerated taint"
QUOTA = "exceeded quota: team-vision-quota"


def _live(home: Path) -> object:
    from trainstack.deploy import service

    return service.live(service.locate("mnist-baseline-01", home=home))


def test_an_unschedulable_pod_says_what_the_scheduler_said(
    home: Path, api: RecordedAPI, cli: PlatformCLI, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.deploy import service
    from trainstack.deploy.service import StackStatus

    entry = deployed(home)
    # the stack half (Pulumi history) is covered in test_deploy; here only the live half
    monkeypatch.setattr(
        service,
        "stack_status",
        lambda *a, **k: StackStatus(
            entry=entry, last_kind="update", last_result="succeeded", last_end=None, outputs={}
        ),
    )
    api.serve(JOB_PATH, "pytorchjob-created.json")
    api.serve(PODS_PATH, "pods-unschedulable.json")
    state = _live(home)
    assert str(state.outcome) == "pending"  # type: ignore[attr-defined]
    (why,) = state.waiting  # type: ignore[attr-defined]
    assert why.startswith("master-0 unschedulable (Unschedulable): " + UNSCHEDULABLE)
    assert "2 Insufficient nvidia.com/gpu" in why
    assert UNSCHEDULABLE in (registry_record(home, entry).reason or "")
    done = cli_exit(["status", "mnist-baseline-01"])
    assert done.code == 0
    assert "job PyTorchJob team-vision/mnist-baseline-01: pending (master-0 unschedulable" in (
        done.out
    )
    assert "  waiting: master-0 unschedulable (Unschedulable): " + UNSCHEDULABLE in done.out


def test_an_image_that_cannot_be_pulled_names_the_container_and_image(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    deployed(home)
    api.serve(JOB_PATH, "pytorchjob-created.json")
    api.serve(PODS_PATH, "pods-image-pull.json")
    (why,) = _live(home).waiting  # type: ignore[attr-defined]
    assert why == (
        "master-0 container prepare ImagePullBackOff: Back-off pulling image "
        '"registry.example.com/acme/torch:2.3"'
    )


def test_a_quota_refusal_is_read_from_the_job_controllers_events(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    entry = deployed(home)
    api.serve(JOB_PATH, "pytorchjob-created.json")
    api.serve(PODS_PATH, "pods-none.json")
    api.serve(EVENTS_PATH, "events-quota.json")
    (why,) = _live(home).waiting  # type: ignore[attr-defined]
    assert why.startswith("FailedCreatePod: Error creating: pods ")
    assert QUOTA in why
    # the events asked for are the job's own
    query = next(q for p, q, _ in api.requests if p == EVENTS_PATH)
    selector = query["fieldSelector"][0]
    assert "involvedObject.name=mnist-baseline-01" in selector
    assert "involvedObject.kind=PyTorchJob" in selector
    assert QUOTA in (registry_record(home, entry).reason or "")


def test_a_refusal_followed_by_a_created_pod_is_no_longer_a_reason(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    deployed(home)
    api.serve(JOB_PATH, "pytorchjob-created.json")
    api.serve(PODS_PATH, "pods-unschedulable.json")
    api.serve(EVENTS_PATH, "events-quota-lifted.json")
    waiting = _live(home).waiting  # type: ignore[attr-defined]
    assert not any(QUOTA in w for w in waiting)
    assert any(UNSCHEDULABLE in w for w in waiting)


def test_a_gang_scheduled_job_says_what_its_podgroup_says(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    deployed(home)
    api.serve(JOB_PATH, "pytorchjob-created.json")
    api.serve(PODS_PATH, "pods-gang-pending.json")
    api.serve(PODGROUP_PATH, "podgroup-volcano.json")
    waiting = _live(home).waiting  # type: ignore[attr-defined]
    assert waiting == (
        "PodGroup mnist-baseline-01 Unschedulable (NotEnoughResources): 2/2 tasks in gang "
        "unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; Pending: 2 "
        "Unschedulable",
    )


COSCHEDULING_PATH = (
    f"/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/{NS}/podgroups/mnist-baseline-01"
)


def test_a_coscheduled_job_says_how_much_of_its_gang_is_placed(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    """kube-coscheduler (the gang scheduler ACK Pro's scheduler implements, and the only one the
    ack platform accepts): its PodGroup has a phase and counts, no conditions; the pods name it
    with the pod-group.scheduling.sigs.k8s.io/name label, under the default scheduler."""
    deployed(home)
    api.serve(JOB_PATH, "pytorchjob-created.json")
    api.serve(PODS_PATH, "pods-gang-coscheduling.json")
    api.serve(COSCHEDULING_PATH, "podgroup-coscheduling.json")
    waiting = _live(home).waiting  # type: ignore[attr-defined]
    assert (
        "PodGroup mnist-baseline-01 PreScheduling: 1 of 2 pods placed (the gang starts only "
        "when all fit)"
    ) in waiting


def test_without_podgroup_or_events_access_the_pods_still_say_why(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    deployed(home)
    api.serve(JOB_PATH, "pytorchjob-created.json")
    api.serve(PODS_PATH, "pods-unschedulable.json")
    api.serve(EVENTS_PATH, (403, b'{"kind": "Status", "code": 403, "reason": "Forbidden"}'))
    waiting = _live(home).waiting  # type: ignore[attr-defined]
    assert len(waiting) == 1 and UNSCHEDULABLE in waiting[0]


def test_a_running_job_has_no_waiting_reason(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    deployed(home)
    api.serve(JOB_PATH, "pytorchjob-running.json")
    api.serve(PODS_PATH, "pods-running.json")
    api.serve(EVENTS_PATH, "events-quota.json")
    assert _live(home).waiting == ()  # type: ignore[attr-defined]


def test_waits_progress_line_says_why_it_waits(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    deployed(home)
    # pending, then running, then done: the wait ends on what it reads, not on a clock (a
    # timeout of 0.5 s saw fewer polls than the test needed on a loaded machine)
    api.serve(
        JOB_PATH,
        "pytorchjob-created.json",
        "pytorchjob-running.json",
        "pytorchjob-succeeded.json",
    )
    api.serve(PODS_PATH, "pods-unschedulable.json", "pods-running.json", "pods-succeeded.json")
    done = cli_exit(["wait", "mnist-baseline-01", "--interval", "0.1", "--timeout", "120"])
    assert done.code == 0, done.err
    line = next(x for x in done.err.splitlines() if x.startswith("mnist-baseline-01: pending"))
    assert "[master-0 Pending]" in line
    assert "waiting: master-0 unschedulable (Unschedulable): " + UNSCHEDULABLE in line
    assert "mnist-baseline-01: running" in done.err
