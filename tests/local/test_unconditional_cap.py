"""`faultTolerance.unconditional` is capped at 3 restarts (Huawei ModelArts, creating a training
job, "auto restart"). KubeDL v0.5.0 counts an OnFailure job's restarts in all against `backoffLimit`
(pkg/job_controller/job.go, pastBackoffLimit), so ModelArts' "3 consecutive" is kept as 3 in all:
the renderer writes `backoffLimit: min(maxRestarts, 3)` and the local runner counts against the same
number. Uncapped, `maxRestarts: 5` would render backoffLimit 5 and a local run would fail only after
5 attempts."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.clirunner import Cli
from tests.local.helpers import write_run
from tests.render.conftest import SPECS
from trainstack.registry import Registry, RunStatus
from trainstack.render import render_run
from trainstack.spec import load_run


def test_unconditional_with_five_restarts_renders_backoff_limit_three(tmp_path: Path) -> None:
    for job_type, spec_file in (("mpi", "mpi.run.yaml"), ("custom", "custom.run.yaml")):
        doc = yaml.safe_load((SPECS / spec_file).read_text())
        doc["spec"]["component"] = str((SPECS / doc["spec"]["component"]).resolve())
        doc["spec"]["faultTolerance"] = {"maxRestarts": 5, "unconditional": True}
        path = tmp_path / f"{job_type}.run.yaml"
        path.write_text(yaml.safe_dump(doc))
        job = render_run(load_run(path))[-1]
        policy = job["spec"] if job_type == "custom" else job["spec"]["runPolicy"]
        assert policy["backoffLimit"] == 3, job_type
        # without unconditional, maxRestarts is rendered as written
        doc["spec"]["faultTolerance"] = {"maxRestarts": 5}
        path.write_text(yaml.safe_dump(doc))
        job = render_run(load_run(path))[-1]
        policy = job["spec"] if job_type == "custom" else job["spec"]["runPolicy"]
        assert policy["backoffLimit"] == 5, job_type


@pytest.mark.slow
def test_unconditional_with_five_restarts_stops_locally_at_the_third(
    tmp_path: Path, cli: Cli
) -> None:
    out = tmp_path / "result"
    spec = write_run(
        tmp_path,
        "probe",
        "fails-always",
        parameters={"mode": "fail"},
        outputs={"result": f"file://{out}/"},
        faultTolerance={"maxRestarts": 5, "unconditional": True},
    )
    done = cli("run", spec, "--local", "--grace", "1")
    assert done.returncode == 1
    # As the operator counts: the restart that brings the count to backoffLimit (3) fails the
    # job, so the replica ran three times: two restarts ran to completion, the third was the
    # one that ended the job.
    assert (out / "attempts").read_text() == "attempt\n" * 3
    assert "capped at 3" in done.stderr and "restart count reaches 3" in done.stderr, done.stderr
    with Registry.open(cli.home) as reg:
        (record,) = reg.list()
        history = reg.restarts(record.id)
    assert record.status is RunStatus.FAILED
    assert record.restarts == 2
    assert [(h.key, h.counted) for h in history] == [("worker-0", True)] * 2
