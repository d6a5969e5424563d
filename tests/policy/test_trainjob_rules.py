"""`policy check` weighs a TrainJob by the pods Kubeflow Trainer makes of it
(trainstack.trainer.nodepod): numNodes pods of resourcesPerNode against the team's quota, and each
pod against the platform's pod guard (pod-shape). A TrainJob carries no pod template of its own,
so before, every quota, fit and shape rule found nothing to weigh and passed it: a TrainJob of 41
CPUs passed a team quota of 16."""

from __future__ import annotations

from pathlib import Path

from tests.clirunner import Cli
from tests.render.test_template_overrides import _packaged, _replace
from tests.trainer.environments import REPO, TRAINER_ENV, trainer_project

MNIST = REPO / "components/mnist-ddp/runs/local.yaml"


def _run(folder: Path, old: str = "", new: str = "") -> Path:
    text = MNIST.read_text().replace("../component.yaml", str(MNIST.parents[1] / "component.yaml"))
    run = folder / "run.yaml"
    run.write_text(text.replace(old, new) if old else text)
    return run


def test_a_trainjob_over_its_teams_quota_is_refused_with_the_numbers(
    tmp_path: Path, cli: Cli
) -> None:
    project = trainer_project(tmp_path / "p")
    run = _run(tmp_path, "worker: {replicas: 2, cpu: 1", "worker: {replicas: 40, cpu: 1")
    done = cli("policy", "check", str(run), "--env", TRAINER_ENV, "--project", str(project))
    assert done.code == 1, (done.out, done.err)
    text = done.out + done.err
    assert "team-quota" in text and "TrainJob" in text
    assert "cpu=41, memory=82Gi" in text and "cpu 41 > 16" in text


def test_a_trainjob_within_its_quota_passes(tmp_path: Path, cli: Cli) -> None:
    project = trainer_project(tmp_path / "p")
    done = cli(
        "policy", "check", str(_run(tmp_path)), "--env", TRAINER_ENV, "--project", str(project)
    )
    assert done.code == 0, (done.out, done.err)


def test_an_override_giving_the_nodes_an_nfs_volume_is_refused_by_the_pod_guard(
    tmp_path: Path, cli: Cli
) -> None:
    template = _replace(
        _packaged("trainjob.yaml.j2"),
        "volumes: {{ p.volumes | tojson }}",
        'volumes: {{ (p.volumes + [{"name": "nas", "nfs": {"server": "nas", "path": "/"}}])'
        " | tojson }}",
    )
    project = trainer_project(tmp_path / "p")
    (project / "templates").mkdir()
    (project / "templates" / "trainjob.yaml.j2").write_text(template)
    done = cli(
        "policy", "check", str(_run(tmp_path)), "--env", TRAINER_ENV, "--project", str(project)
    )
    assert done.code == 1, (done.out, done.err)
    text = done.out + done.err
    assert "pod-shape" in text and "spec.trainer" in text
    assert "spec.volumes may use only" in text
