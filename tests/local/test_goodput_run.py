"""The goodput ledger of a real local run with one preemption and one hang restart: it adds up to
the run's wall time, each part computed from the run's own records (the registry's recovery
history, the progress clock its sampler wrote, training_job.json's hang timeout). Before this
no verb said where a run's time went."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.local.helpers import write_run
from trainstack.metrics import progress
from trainstack.registry import Registry, RunStatus


@pytest.mark.slow  # a real training process, waiting out a real hang timeout (5s)
def test_a_preempted_and_hung_runs_ledger_adds_up_to_its_wall_time(
    tmp_path: Path, cli: Cli
) -> None:
    spec = write_run(
        tmp_path,
        "ledger",
        "ledger",
        parameters={"steps": 30, "every": 5, "hangAt": 20, "seconds": 0.25},
        outputs={"checkpoints": f"file://{tmp_path / 'ckpt'}/"},
        resources={"master": {"replicas": 1, "cpu": 1}},
        faultTolerance={"maxRestarts": 2, "hangTimeout": "5s"},
    )
    done = cli("run", spec, "--local", "--preempt", "master-0@3.6", "--grace", "1")
    assert done.returncode == 0, done.output
    with Registry.open(cli.home) as reg:
        (record,) = reg.list()
        history = reg.restarts(record.id)
    assert record.status is RunStatus.SUCCEEDED and record.run_dir is not None
    assert [h.reason for h in history] == ["preempted", "hung"]
    marks = progress.read(record.run_dir / "progress.jsonl", root=record.run_dir)
    steps = [m.step for m in marks if m.step is not None]
    assert steps[-1] == 30 and any(b < a for a, b in itertools.pairwise(steps))

    shown = cli("runs", "show", record.id, "--json")
    assert shown.returncode == 0, shown.output
    ledger = json.loads(shown.out)["goodput"]
    parts = {p["part"]: p["seconds"] for p in ledger["parts"]}
    assert ledger["wall_seconds"] == pytest.approx(record.duration)
    assert sum(parts.values()) == pytest.approx(record.duration)
    assert parts["queue"] == 0.0
    assert parts["start-up"] > 0
    # the preemption: from its restart to the step reached before it (the progress clock looks
    # once a second, so that is as fine as it gets)
    preempted, hung = history
    assert 0 < parts["restarts"] <= 3.0
    # the hang: the 5s silent window, then the restart to the step reached before it
    assert 5.0 <= parts["hang"] <= 5.0 + 3.0
    assert hung.at - 5.0 > preempted.at
    assert parts["productive"] > 0.5 * (30 * 0.25)

    text = cli("runs", "show", record.id)
    bar = next(x for x in text.out.splitlines() if x.startswith("goodput"))
    assert "h" in bar.split("[")[1].split("]")[0] and "r=restarts" in bar
