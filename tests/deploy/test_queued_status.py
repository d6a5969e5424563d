"""`status` of a queued run says what Kueue says (trainstack/deploy/queueing.py; docs/queues.md):
its Workload's QuotaReserved reason and message, its place in its team's queue from the
pending-workloads visibility API, whom it was preempted for. Against the recorded-response server
of test_cluster (Kueue v0.19.2's responses, tests/infra/kubeapi/README.md), through the real
``kubernetes`` client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
from trainstack.deploy.apijson import AnswerError, Reader
from trainstack.deploy.queueing import find_workload, position, workload_state

api, cli, home = recorded.api, recorded.cli, recorded.home

WORKLOADS_PATH = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NS}/workloads"
PENDING_PATH = (
    f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{NS}/localqueues/trainstack/"
    "pendingworkloads"
)


def _live(home: Path) -> object:
    from trainstack.deploy import service

    return service.live(service.locate("mnist-baseline-01", home=home))


def _pending(home: Path, api: RecordedAPI, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A deployed run whose job waits in its team's queue, as the recorded responses say. The
    stack half (Pulumi history) is covered in test_deploy; here only the live half."""
    from trainstack.deploy import service
    from trainstack.deploy.service import StackStatus

    entry = deployed(home)
    monkeypatch.setattr(
        service,
        "stack_status",
        lambda *a, **k: StackStatus(
            entry=entry, last_kind="update", last_result="succeeded", last_end=None, outputs={}
        ),
    )
    api.serve(JOB_PATH, "pytorchjob-created.json")
    api.serve(PODS_PATH, "pods-gated.json")
    api.serve(WORKLOADS_PATH, "workloads-pending.json")
    api.serve(PENDING_PATH, "pendingworkloads-localqueue.json")
    return entry


def test_a_pending_queued_run_says_kueues_reason_and_its_place_in_line(
    home: Path, api: RecordedAPI, cli: PlatformCLI, monkeypatch: pytest.MonkeyPatch
) -> None:

    entry = _pending(home, api, monkeypatch)
    state = _live(home)
    assert str(state.outcome) == "pending"  # type: ignore[attr-defined]
    why = state.waiting  # type: ignore[attr-defined]
    assert (
        "Kueue: waiting for quota: the team's share and what the cohort lends are in use "
        "(WaitingForQuota): couldn't assign flavors to pod set 9f8e7d6c: insufficient unused "
        "quota for nvidia.com/gpu in flavor a10, 2 more needed"
    ) in why
    assert "Kueue: position 2 in its team's queue trainstack (3 in the team's ClusterQueue)" in why
    assert "WaitingForQuota" in (registry_record(home, entry).reason or "")
    done = cli_exit(["status", "mnist-baseline-01"])
    assert done.code == 0, done.output
    assert "  waiting: Kueue: waiting for quota" in done.out
    assert "position 2 in its team's queue trainstack" in done.out
    assert "Traceback" not in done.output


def test_a_preempted_run_says_whom_for(home: Path, api: RecordedAPI, cli: PlatformCLI) -> None:
    entry = deployed(home)
    api.serve(JOB_PATH, "pytorchjob-created.json")
    api.serve(PODS_PATH, "pods-gated.json")
    api.serve(WORKLOADS_PATH, "workloads-preempted.json")
    api.serve(PENDING_PATH, "pendingworkloads-localqueue.json")
    why = _live(home).waiting  # type: ignore[attr-defined]
    assert (
        "Kueue preempted it for a higher-priority job of the same team "
        "(queue /trainstack/vision); it waits in its queue again"
    ) in why
    assert not any("WaitingForReplacementPods" in w for w in why)
    # its recovery history says Kueue preempted it: the whole job, not counted as a restart
    from trainstack.registry import Registry

    with Registry.open(home) as registry:
        (restart,) = registry.restarts(entry.registry_id)  # type: ignore[arg-type]
    assert (restart.role, restart.reason, restart.counted) == ("job", "preempted", False)
    assert restart.detail.startswith(
        "preempted by Kueue for a higher-priority job of the same team (queue /trainstack/vision)"
    )
    _live(home)  # read again: recorded once
    with Registry.open(home) as registry:
        assert len(registry.restarts(entry.registry_id)) == 1  # type: ignore[arg-type]


def test_the_console_tells_a_queued_run_as_status_does(
    home: Path, api: RecordedAPI, cli: PlatformCLI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The console's page of a pending deployed run: Kueue's reason and its place in line, and
    the preemption in its recovery history, from the same recorded responses `status` reads."""
    import html as htmlmod

    from trainstack.ui import deployed as console_live
    from trainstack.ui.app import UiConfig, create_app

    entry = _pending(home, api, monkeypatch)
    console_live._CACHE.clear()
    with create_app(UiConfig(home=home)).test_client() as client:
        client.environ_base["HTTP_HOST"] = "127.0.0.1:8765"
        page = htmlmod.unescape(client.get(f"/runs/{entry.registry_id}").get_data(as_text=True))
    why = _live(home).waiting  # type: ignore[attr-defined]
    kueue = [w for w in why if w.startswith("Kueue")]
    assert len(kueue) == 2
    for line in kueue:  # the reason, and the place in line
        assert line in page, line
    assert "live status unavailable" not in page


def test_without_kueue_nothing_is_asked_of_it(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    deployed(home)
    api.serve(JOB_PATH, "pytorchjob-created.json")
    api.serve(PODS_PATH, "pods-unschedulable.json")
    why = _live(home).waiting  # type: ignore[attr-defined]
    assert not any("Kueue" in w for w in why)
    assert not any("pendingworkloads" in path for path, _q, _a in api.requests)


def test_an_admitted_workload_has_no_queue_reasons() -> None:
    import json

    from tests.deploy.test_cluster import RECORDED

    items = json.loads((RECORDED / "workloads-admitted.json").read_text())["items"]
    wl = find_workload(items, "mnist-baseline-01", "PyTorchJob", Reader("t"))
    assert wl is not None
    state = workload_state(wl, Reader("t"))
    assert state.admitted and state.lines() == ()


def test_a_job_owned_workload_is_found_by_its_owner() -> None:
    items = [
        {
            "metadata": {
                "name": "job-finetune-v4-1a2b3",
                "ownerReferences": [{"kind": "Job", "name": "finetune-v4"}],
            }
        }
    ]
    wl = find_workload(items, "finetune-v4", "Job", Reader("t"))
    assert wl is not None and wl["metadata"]["name"] == "job-finetune-v4-1a2b3"
    assert find_workload(items, "finetune-v4", "PyTorchJob", Reader("t")) is None


def test_an_odd_answer_is_one_clear_error() -> None:
    with pytest.raises(AnswerError):
        position(
            {"items": [{"metadata": {"name": "x"}, "positionInLocalQueue": "first"}]},
            "x",
            Reader("t"),
        )
