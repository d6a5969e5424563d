"""Every shipped MPI run (cifar-horovod) on a Kubeflow Trainer copy of the environment it is
written for: `plan` shows its own TrainingRuntime beside its TrainJob and says the image needs
sshd; `policy check` weighs the pods Trainer and JobSet make of that runtime (the workers' and the
launcher's) and passes them. Before, `plan` refused every MPI run on Trainer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clirunner import Cli
from tests.trainer.environments import REPO, trainer_project
from trainstack.kueue.api import QUEUE_LABEL
from trainstack.platformnames import ENV_TAG
from trainstack.spec import load_run

MPI_RUNS = [
    (p, env)
    for p in sorted((REPO / "components").glob("*/runs/*.yaml"))
    if load_run(p).component.job_type == "mpi" and (env := load_run(p).tags.get(ENV_TAG))
]


def _on_trainer(folder: Path, env: str) -> Path:
    """The project with `env` switched to Trainer (its registry, teams and pools unchanged)."""
    project = trainer_project(folder)
    path = project / f"Pulumi.{env}.yaml"
    path.write_text(path.read_text() + "  trainstack:operator: trainer\n")
    return project


def test_there_is_a_shipped_mpi_run() -> None:
    assert MPI_RUNS


@pytest.mark.parametrize(("run", "env"), MPI_RUNS, ids=[p.stem for p, _ in MPI_RUNS])
def test_a_shipped_mpi_run_plans_and_passes_policy_on_trainer(
    tmp_path: Path, cli: Cli, run: Path, env: str
) -> None:
    project = _on_trainer(tmp_path / "p", env)
    done = cli("plan", str(run), "--env", env, "--project", str(project), "--json")
    assert done.code == 0, (done.out, done.err)
    planned = json.loads(done.out)
    kinds = [r["type"].rsplit(":", 1)[-1] for r in planned["resources"]]
    assert "TrainingRuntime" in kinds and "TrainJob" in kinds
    # Kueue queues the TrainJob, as it queues the other kinds; the runtime is no workload
    by_kind = {r["type"].rsplit(":", 1)[-1]: r["inputs"] for r in planned["resources"]}
    assert QUEUE_LABEL in by_kind["TrainJob"]["metadata"]["labels"]
    assert QUEUE_LABEL not in by_kind["TrainingRuntime"]["metadata"]["labels"]
    assert any("OpenSSH" in n for n in planned["notes"])
    done = cli("policy", "check", str(run), "--env", env, "--project", str(project))
    assert done.code == 0, (done.out, done.err)


def test_its_workers_are_weighed_against_the_teams_quota(tmp_path: Path, cli: Cli) -> None:
    """The TrainJob carries no pods; its runtime's are counted (numNodes - 1 workers and the
    launcher), so a run of more GPUs than its team holds is refused."""
    run, env = MPI_RUNS[0]
    project = _on_trainer(tmp_path / "p", env)
    text = run.read_text().replace("../component.yaml", str(run.parents[1] / "component.yaml"))
    assert "worker: {replicas: 3," in text
    big = tmp_path / "big.yaml"
    big.write_text(text.replace("worker: {replicas: 3,", "worker: {replicas: 30,"))
    done = cli("policy", "check", str(big), "--env", env, "--project", str(project))
    assert done.code == 1, (done.out, done.err)
    out = done.out + done.err
    assert "team-quota" in out and "TrainingRuntime" in out
