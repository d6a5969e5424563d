"""status of a run deployed as a Kubeflow Trainer TrainJob, against recorded API responses
(tests/infra/kubeapi: trainjob-*.json, jobset-restarting.json, pods-trainjob-restarted.json).

A TrainJob's pods are its JobSet's, labelled `jobset.sigs.k8s.io/jobset-name` (each replicated job
is a Job of its own, so `job-name` is `<job>-node-0`, not the TrainJob's name); the role is the
replicated job and the index the completion index; a whole-set restart shows only in the JobSet
(`status.restarts`, the RestartingJobSet condition) and in the new pods' restart-attempt label.
Before, status asked for `job-name=<job>` and found no pod, and never read the JobSet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tests.deploy.test_cluster as recorded
from tests.deploy.test_cluster import NS, PODS_PATH, PlatformCLI, RecordedAPI, cli_exit, deployed

# test_cluster's fixtures: the recorded-response server, the stand-in CLI, the state home.
api, cli, home = recorded.api, recorded.cli, recorded.home

JOB = "mnist-baseline-01"
TRAINJOB_PATH = f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{NS}/trainjobs/{JOB}"
JOBSET_PATH = f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{NS}/jobsets/{JOB}"


def _deployed(home: Path) -> Any:
    return deployed(home, kind="TrainJob", api_version="trainer.kubeflow.org/v1alpha1")


def _live(home: Path) -> Any:
    from trainstack.deploy import service

    return service.live(service.locate(JOB, home=home))


def test_a_restarted_trainjob_shows_its_current_nodes_and_the_jobsets_restart(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    _deployed(home)
    api.serve(TRAINJOB_PATH, "trainjob-running.json")
    api.serve(JOBSET_PATH, "jobset-restarting.json")
    api.serve(PODS_PATH, "pods-trainjob-restarted.json")
    state = _live(home)
    assert str(state.outcome) == "running"
    # the pods of the restart attempt the JobSet is on; attempt 0's are being deleted
    assert [(r.role, r.index, r.phase) for r in state.replicas] == [
        ("node", 0, "Running"),
        ("node", 1, "Running"),
    ]
    assert state.set_restarts == 1 and state.restarts == 1
    (cond,) = [c for c in state.conditions if c.type == "RestartingJobSet"]
    assert "first failed job: mnist-baseline-01-node-0" in (cond.message or "")
    queries = {p: q for p, q, _ in api.requests}
    assert queries[PODS_PATH] == {"labelSelector": [f"jobset.sigs.k8s.io/jobset-name={JOB}"]}


def test_status_records_the_whole_set_restart_once_in_the_recovery_history(
    home: Path, api: RecordedAPI, cli: PlatformCLI, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.deploy import service
    from trainstack.deploy.service import StackStatus
    from trainstack.registry import Registry

    entry = _deployed(home)
    monkeypatch.setattr(
        service,
        "stack_status",
        lambda *a, **k: StackStatus(
            entry=entry, last_kind="update", last_result="succeeded", last_end=None, outputs={}
        ),
    )
    api.serve(TRAINJOB_PATH, "trainjob-running.json")
    api.serve(JOBSET_PATH, "jobset-restarting.json")
    api.serve(PODS_PATH, "pods-trainjob-restarted.json")
    for _ in range(2):  # read twice: recorded once
        done = cli_exit(["status", JOB])
        assert done.code == 0, done.output
    assert "job TrainJob team-vision/mnist-baseline-01: running" in done.out
    assert "condition RestartingJobSet=True DefaultFailurePolicy" in done.out
    (line,) = [x for x in done.out.splitlines() if "restart:" in x]
    assert "jobset-1  whole set restarted" in line and "mnist-baseline-01-node-0" in line
    assert entry.registry_id is not None
    with Registry.open(home) as registry:
        (restart,) = registry.restarts(entry.registry_id)
    assert (restart.key, restart.reason) == ("jobset-1", "whole set restarted")


def test_a_trainjob_past_its_restarts_reads_failed_with_jobsets_reason(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    _deployed(home)
    api.serve(TRAINJOB_PATH, "trainjob-failed.json")
    api.serve(PODS_PATH, "pods-none.json")  # a finished JobSet deletes its active Jobs
    state = _live(home)
    assert str(state.outcome) == "failed"
    assert state.message is not None
    assert "reaching max number of restarts" in state.message
    assert state.set_restarts == 0  # the JobSet is not served: nothing more is claimed


def _mpi_pod(job: str, role: str, index: int) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"{JOB}-{job}-0-{index}",
            "labels": {
                "jobset.sigs.k8s.io/jobset-name": JOB,
                "jobset.sigs.k8s.io/replicatedjob-name": job,
                "trainstack.dev/role": role,
            },
            "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
        },
        "status": {"phase": "Running", "containerStatuses": [{"name": "node", "state": {}}]},
    }


def test_an_mpi_trainjobs_launcher_and_node_jobs_are_its_launcher_and_workers() -> None:
    """An MPI run's TrainJob runs on its own runtime: the `launcher` job's pod is the launcher,
    the `node` job's pods the workers, by the role trainstack renders on each (as `logs` and
    `wait` name them). Before, both showed as their replicated jobs."""
    from trainstack.deploy.jobstate import job_state

    pods = [_mpi_pod("node", "worker", 1), _mpi_pod("launcher", "launcher", 0)]
    pods.append(_mpi_pod("node", "worker", 0))
    state = job_state("TrainJob", JOB, NS, {"status": {}}, pods, "node")
    assert [(r.role, r.index) for r in state.replicas] == [
        ("launcher", 0),
        ("worker", 0),
        ("worker", 1),
    ]
