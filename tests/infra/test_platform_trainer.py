"""A Trainer environment's platform (`trainstack:operator: trainer`) installs JobSet, Kubeflow
Trainer and trainstack's ClusterTrainingRuntimes beside KubeDL; a KubeDL environment's plan has
none of them. The CRDs come from locked folders (fake CRD files here, never the releases')."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.clirunner import Cli
from tests.infra.conftest import fake_crd
from tests.trainer.environments import TRAINER_ENV, trainer_project
from trainstack.infra.platform.kubedl_source import mirror
from trainstack.infra.platform.trainer_release import JOBSET_RELEASE, TRAINER_RELEASE
from trainstack.platformnames import PRIORITIES, priority_class_name
from trainstack.trainer.restart import RUNTIME_FAILURE_POLICY
from trainstack.trainer.runtimes import RUNTIMES

CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
RUNTIME = "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    trainer_project(tmp_path / "project")
    monkeypatch.chdir(tmp_path / "project")
    return tmp_path / "project"


def _plan(env: str) -> list[dict[str, Any]]:
    done = Cli().invoke("plan", "--env", env, "--json")
    assert done.code == 0, done.output
    return json.loads(done.out)["resources"]  # type: ignore[no-any-return]


def _of(resources: list[dict[str, Any]], typ: str) -> list[dict[str, Any]]:
    return [r for r in resources if r["type"] == typ]


def test_a_trainer_environment_plans_trainer_jobset_their_controllers_and_runtimes(
    project: Path,
) -> None:
    resources = _plan(TRAINER_ENV)
    crds = {r["inputs"]["metadata"]["name"] for r in _of(resources, CRD)}
    assert {
        "trainjobs.trainer.kubeflow.org",
        "trainingruntimes.trainer.kubeflow.org",
        "clustertrainingruntimes.trainer.kubeflow.org",
        "jobsets.jobset.x-k8s.io",
    } <= crds
    deployments = {r["inputs"]["metadata"]["name"] for r in _of(resources, DEPLOYMENT)}
    assert {"kubeflow-trainer-controller-manager", "jobset-controller-manager"} <= deployments
    runtimes = {
        r["inputs"]["metadata"]["name"]: r["inputs"]["spec"] for r in _of(resources, RUNTIME)
    }
    base = ("torch-distributed", "xgboost-distributed")
    at = [(f"{b}-priority-{p}", p) for b in base for p in PRIORITIES]
    assert set(runtimes) == {*base, *(name for name, _ in at)}
    # A TrainJob cannot name a priority class, so a run of priority p names the runtime whose
    # pods carry trainstack's class p; the others carry none.
    for name, spec in runtimes.items():
        classes = {
            job["template"]["spec"]["template"]["spec"].get("priorityClassName")
            for job in spec["template"]["spec"]["replicatedJobs"]
        }
        priority = dict(at).get(name)
        assert classes == {None if priority is None else priority_class_name(priority)}, name
    policy = RUNTIME_FAILURE_POLICY
    for spec in runtimes.values():
        jobset = spec["template"]["spec"]
        assert jobset["failurePolicy"] == {"maxRestarts": policy.max_restarts}
        for job in jobset["replicatedJobs"]:
            assert job["template"]["spec"]["backoffLimit"] == policy.backoff_limit
            pod = job["template"]["spec"]["template"]["spec"]
            assert pod["restartPolicy"] == policy.pod_restart_policy
    torch = runtimes[RUNTIMES["pytorch"].runtime_name]  # type: ignore[index]
    assert "torch" in torch["mlPolicy"]


def test_a_kubedl_environment_plans_none_of_it(project: Path) -> None:
    resources = _plan("local")
    crds = {r["inputs"]["metadata"]["name"] for r in _of(resources, CRD)}
    assert not {c for c in crds if "trainer.kubeflow.org" in c or "jobset" in c}
    assert not _of(resources, RUNTIME)
    roles = [r for r in resources if r["type"] == "kubernetes:rbac.authorization.k8s.io/v1:Role"]
    assert roles and all("trainjobs" not in json.dumps(r["inputs"]) for r in roles)


def test_teams_may_run_trainjobs_and_read_jobsets_on_trainer(project: Path) -> None:
    roles = [
        r
        for r in _plan(TRAINER_ENV)
        if r["type"] == "kubernetes:rbac.authorization.k8s.io/v1:Role"
        and r["inputs"]["metadata"]["name"] == "trainstack-runner"
    ]
    assert roles
    for role in roles:
        rules = role["inputs"]["rules"]
        trainjobs = next(x for x in rules if x["resources"] == ["trainjobs"])
        assert {"create", "get", "list", "watch", "delete"} <= set(trainjobs["verbs"])
        jobsets = next(x for x in rules if x["resources"] == ["jobsets"])
        assert set(jobsets["verbs"]) == {"get", "list", "watch"}
        # an MPI run's own runtime, in the team's namespace (this Role's) only; never the
        # platform's cluster-scoped ones. Before, none.
        runtimes = next(x for x in rules if x["resources"] == ["trainingruntimes"])
        assert {"create", "update", "patch", "delete"} <= set(runtimes["verbs"])
        assert not any("clustertrainingruntimes" in r for x in rules for r in x["resources"])


def test_a_kubedl_environment_naming_a_trainer_key_is_one_error(project: Path) -> None:
    path = project / "Pulumi.local.yaml"
    path.write_text(path.read_text() + "  trainer:image: ghcr.io/x/trainer:v2.3.0\n")
    done = Cli().invoke("plan", "--env", "local")
    assert done.code != 0
    assert "Pulumi.local.yaml: trainer:image: only used when trainstack:operator is trainer" in (
        done.err
    )
    assert "Traceback" not in done.output


def test_a_crd_file_that_does_not_match_the_lock_is_refused_naming_it(project: Path) -> None:
    folder = project / "platform/trainer/v2.3.0"
    (folder / "trainer.kubeflow.org_trainjobs.yaml").write_text("tampered: true\n")
    done = Cli().invoke("plan", "--env", TRAINER_ENV)
    assert done.code != 0
    assert "platform/trainer/v2.3.0/trainer.kubeflow.org_trainjobs.yaml: sha256" in done.err
    assert "does not match the lock" in done.err and "Traceback" not in done.output


@pytest.mark.parametrize("release", [TRAINER_RELEASE, JOBSET_RELEASE], ids=lambda r: r.name)
def test_mirror_release_writes_and_checks_the_lock(tmp_path: Path, release: Any) -> None:
    source = tmp_path / "release" / release.release_path
    source.mkdir(parents=True)
    for kind, file in release.crds.items():
        (source / file).write_text(fake_crd(kind, file))
    folder = tmp_path / release.folder("v9.9.9")
    written = mirror(
        str(tmp_path / "release"), folder, write_lock_version="v9.9.9", release=release
    )
    assert sorted(p.name for p in written) == sorted(release.crds.values())
    lock = json.loads((folder / release.lock_name).read_text())
    assert lock["version"] == "v9.9.9" and set(lock["crds"]) == set(release.crds)
    done = Cli().invoke(
        "kubedl", "mirror", "--release", release.name, "--from", str(tmp_path), "--to", str(folder)
    )
    assert done.code != 0 and "holds neither" in done.err and "Traceback" not in done.output
