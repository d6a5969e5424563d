"""Kueue's question, asked offline (trainstack/policy/rules/quota.py; docs/queues.md): on the
shipped environments, which queue, a job that fits its team's quota passes, one that fits only
by borrowing from the cohort is admitted with a note (queue-borrowing, advisory), and one larger
than the team's quota plus what the cohort lends is refused with the numbers (team-quota), as
Kueue would leave it pending for good (ExceedsMaxQuota)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.clirunner import Cli
from tests.policy.test_fit import REPO, fit, write_run
from trainstack.envfile import find_project
from trainstack.infra.platform.queues import GPU, QueueModel
from trainstack.plan.service import platform_outputs
from trainstack.policy.model import Level


@pytest.fixture(scope="module")
def outputs() -> dict[str, Mapping[str, Any]]:
    project = find_project(REPO)
    return {env: platform_outputs(project, env)[0] for env in ("ack-dev", "local")}


def _queue_findings(run: Path, env: str, outputs: Mapping[str, Mapping[str, Any]]) -> list[Any]:
    return [
        v
        for v in fit(run, env, outputs, queue=True)
        if v.rule == "queue-borrowing" or "Kueue" in v.found
    ]


def test_a_job_within_the_teams_quota_passes(
    tmp_path: Path, outputs: Mapping[str, Mapping[str, Any]]
) -> None:
    run = write_run(tmp_path, "mnist-ddp", "{team: nlp}", "    master: {cpu: 4, memory: 8Gi}\n")
    assert _queue_findings(run, "local", outputs) == []


def test_a_job_that_fits_only_by_borrowing_is_admitted_with_a_note(
    tmp_path: Path, outputs: Mapping[str, Mapping[str, Any]]
) -> None:
    # local: nlp has 16 CPUs of its own, and vision lends all its 16 (no limits set there)
    run = write_run(
        tmp_path,
        "mnist-ddp",
        "{team: nlp}",
        "    master: {cpu: 4, memory: 8Gi}\n    worker: {replicas: 4, cpu: 4, memory: 8Gi}\n",
    )
    (v,) = _queue_findings(run, "local", outputs)
    assert (v.rule, v.level) == ("queue-borrowing", Level.ADVISORY)
    assert "team 'nlp''s queue, flavor 'all-nodes' only by borrowing" in v.found
    assert "cpu 20 > 16 (at most 32 with what the cohort lends)" in v.found
    done = Cli().invoke("policy", "check", str(run), "--env", "local")
    assert done.code == 0, done.output
    assert "queue-borrowing" in done.output


def test_a_job_larger_than_quota_plus_what_the_cohort_lends_is_refused_with_the_numbers(
    tmp_path: Path, outputs: Mapping[str, Mapping[str, Any]]
) -> None:
    run = write_run(
        tmp_path,
        "mnist-ddp",
        "{team: nlp}",
        "    master: {cpu: 4, memory: 8Gi}\n    worker: {replicas: 9, cpu: 4, memory: 8Gi}\n",
    )
    (v,) = _queue_findings(run, "local", outputs)
    assert (v.rule, v.level) == ("team-quota", Level.MANDATORY)
    assert "needs more than team 'nlp''s queue, flavor 'all-nodes' can ever admit" in v.found
    assert "cpu 40 > 16 (at most 32 with what the cohort lends)" in v.found
    assert "ExceedsMaxQuota" in v.found
    done = Cli().invoke("policy", "check", str(run), "--env", "local")
    assert done.code == 1 and "cpu 40 > 16 (at most 32" in done.output
    assert "Traceback" not in done.output


def test_borrowing_is_bounded_by_the_limits_ack_dev_sets(
    tmp_path: Path, outputs: Mapping[str, Mapping[str, Any]]
) -> None:
    """ack-dev: a team lends half of each share (lendingLimit 50%): vision may hold at most its
    4 A10s and the 2 nlp lends: 5 GPUs on a10 borrow."""
    model = QueueModel.from_output(outputs["ack-dev"]["kueueQueues"])
    assert model is not None and model.maximum("vision", "a10", GPU) == 6
    gpus = (
        "    master: {{cpu: 2, memory: 8Gi, gpu: 1}}\n"
        "    worker: {{replicas: {n}, cpu: 2, memory: 8Gi, gpu: 1}}\n"
    )
    borrow = write_run(tmp_path, "mnist-ddp", "{team: vision}", gpus.format(n=4), name="b")
    findings = _queue_findings(borrow, "ack-dev", outputs)
    assert [v.rule for v in findings] == ["queue-borrowing"], findings
    assert "flavor 'a10' only by borrowing: gpus 5 > 4 (at most 6" in findings[0].found


def test_pods_no_flavor_admits_are_refused(
    tmp_path: Path, outputs: Mapping[str, Mapping[str, Any]]
) -> None:
    """A CPU spot pod on ack-dev: the only spot pool holds GPUs and is tainted so."""
    run = write_run(
        tmp_path,
        "mnist-ddp",
        "{team: nlp}",
        "    master: {cpu: 4, memory: 8Gi}\n",
        "  spot: true\n",
    )
    (v,) = _queue_findings(run, "ack-dev", outputs)
    assert v.rule == "team-quota" and "NoMatchingFlavor" in v.found


def test_every_shipped_run_is_queued_and_fits_its_queue_without_borrowing() -> None:
    from tests.plan.test_examples_plan import TARGETED
    from trainstack.kueue.api import POD_GROUP_NAME_LABEL, QUEUE_LABEL
    from trainstack.plan.service import plan_run
    from trainstack.policy.check import check_plan

    project = find_project(REPO)
    for run_file, env in TARGETED:
        outs, _ = platform_outputs(project, env)
        plan = plan_run(run_file, env, REPO)
        report = check_plan(plan, env, str(run_file), outs, REPO)
        # (queue-recreate, advisory, notes fault-tolerant KubeDL runs: tests/policy/
        # test_queue_recreate.py; it is no question of fit)
        fit = [v for v in report.violations if v.rule != "queue-recreate"]
        assert not [v for v in fit if "Kueue" in v.found or "queue" in v.rule], run_file
        # every shipped run's job carries its team's queue, its replicas one pod group, and the
        # platform's pod guard admits them (pod-shape)
        (job,) = [r for r in plan.resources if "kubedl.io" in r.type]
        assert job.inputs["metadata"]["labels"][QUEUE_LABEL] == "trainstack", run_file
        replicas = next(v for k, v in job.inputs["spec"].items() if k.endswith("ReplicaSpecs"))
        for spec in replicas.values():
            labels = spec["template"]["metadata"]["labels"]
            assert labels[POD_GROUP_NAME_LABEL] == job.inputs["metadata"]["name"], run_file
        assert not [v for v in report.violations if v.rule == "pod-shape"], run_file
