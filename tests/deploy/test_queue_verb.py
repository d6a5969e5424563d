"""`trainstack queue --env ENV [--team T]` (trainstack/deploy/queueview.py): each team's
Workloads as Kueue has them — pending ones with their place in line and reason, admitted ones
with the flavors they hold — against recorded Kueue v0.19.2 responses (tests/infra/kubeapi)."""

from __future__ import annotations

import json
from pathlib import Path

import tests.deploy.test_cluster as recorded
from tests.deploy.test_cluster import NS, PlatformCLI, RecordedAPI, cli_exit

api, cli, home = recorded.api, recorded.cli, recorded.home

WORKLOADS_PATH = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NS}/workloads"
PENDING_PATH = (
    f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{NS}/localqueues/trainstack/"
    "pendingworkloads"
)
QUEUES = {"cohort": "trainstack", "localQueue": "trainstack", "flavors": [], "teams": {}}


def test_the_queue_of_each_team(home: Path, api: RecordedAPI, cli: PlatformCLI) -> None:
    cli.outputs["kueueQueues"] = QUEUES
    api.serve(WORKLOADS_PATH, "workloads-pending.json")
    api.serve(PENDING_PATH, "pendingworkloads-localqueue.json")
    done = cli_exit(["queue", "--env", "local"])
    assert done.code == 0, done.output
    lines = done.out.splitlines()
    assert lines[0] == "queues of local"
    assert lines[1].split()[:6] == ["TEAM", "WORKLOAD", "STATE", "POSITION", "FLAVORS", "REASON"]
    assert lines[2].startswith("vision  mnist-baseline-01  pending  2 (3 in the ClusterQueue)")
    assert "insufficient unused quota for nvidia.com/gpu in flavor a10" in lines[2]
    done = cli_exit(["queue", "--env", "local", "--team", "vision", "--format", "json"])
    (row,) = json.loads(done.out)
    assert (row["state"], row["position"]) == ("pending", "2 (3 in the ClusterQueue)")


def test_admitted_workloads_show_the_flavors_they_hold(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    cli.outputs["kueueQueues"] = QUEUES
    api.serve(WORKLOADS_PATH, "workloads-admitted.json")
    (row,) = json.loads(cli_exit(["queue", "--env", "local", "--format", "json"]).out)
    assert (row["state"], row["flavors"], row["position"]) == ("admitted", "a10", "")


def test_an_environment_without_queues_or_team_is_one_clear_error(
    home: Path, api: RecordedAPI, cli: PlatformCLI
) -> None:
    done = cli_exit(["queue", "--env", "local"])
    assert done.code != 0 and "does not queue jobs" in done.err
    cli.outputs["kueueQueues"] = QUEUES
    done = cli_exit(["queue", "--env", "local", "--team", "robotics"])
    assert done.code != 0 and "has no team 'robotics'" in done.err
    assert "Traceback" not in done.output
