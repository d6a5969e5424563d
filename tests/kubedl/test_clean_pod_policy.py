"""What happens to a job's pods when it ends.

KubeDL v0.5.0 deletes, under `cleanPodPolicy: Running`, only the pods whose phase is Running
(pkg/job_controller/job.go:51-54), and it does so at every reconcile of a finished job (job.go:182,
no early return for finished jobs): a replica still Pending when the job ends (an image pull,
the `prepare` init container) is left alone until its main container starts, and is deleted at
the next reconcile — its command gets SIGTERM moments after starting. trainstack keeps `Running`
(`All` would delete the finished pods and their logs, which users still read with `trainstack
logs` until logs are shipped to storage) and says so. Before this the model had no such fact and
the docs said nothing of late replicas.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.render.conftest import KUBEDL_CASES
from trainstack.kubedl import CLEAN_POD_POLICY, deleted_when_job_ends
from trainstack.render import render_run

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize(
    ("phase", "deleted"),
    [("Running", True), ("Pending", False), ("Succeeded", False), ("Failed", False)],
)
def test_running_deletes_only_running_pods(phase: str, deleted: bool) -> None:
    assert deleted_when_job_ends("Running", phase) is deleted
    assert deleted_when_job_ends("All", phase) is True
    assert deleted_when_job_ends("None", phase) is False


def test_every_kubedl_job_is_rendered_with_the_modelled_policy() -> None:
    for case in KUBEDL_CASES:
        job = render_run(case.run(), options=case.options)[-1]
        if job["kind"] == "Job":
            continue  # batch/v1: Kubernetes' Job controller has no cleanPodPolicy
        policy = job["spec"].get("runPolicy", job["spec"])["cleanPodPolicy"]
        assert policy == CLEAN_POD_POLICY == "Running", case.name


def test_the_docs_say_what_becomes_of_a_late_replica() -> None:
    kubedl = " ".join((DOCS / "kubedl.md").read_text().replace("**", "").split())
    assert "pkg/job_controller/job.go:51-54" in kubedl
    assert "still Pending when the job ends" in kubedl
    local = " ".join((DOCS / "local.md").read_text().replace("**", "").split())
    assert "still Pending when the job ends" in local
