"""Every golden, expanded into what KubeDL v0.5.0 would create (tests.kubedl.expand): each
volume's source exists or is the operator's, each mounted key exists, nothing rendered collides
with an operator object, no Warning event, and every replica sees exactly the contract's env."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.kubedl.expand import expand, problems
from tests.render.conftest import CASES, KUBEDL_CASES, Case
from trainstack.contract import Topology, replica_env
from trainstack.contractnames import POD_IP_ENV
from trainstack.k8snames import job_name
from trainstack.kubedl import JobType, job_kind
from trainstack.render import RenderOptions, render_run
from trainstack.spec import load_run
from trainstack.spec.model import Run


def _external(run: Run, options: RenderOptions) -> dict[str, set[str]]:
    """Objects the platform or the user own: pull and OSS Secrets, secretEnv Secrets, claims of
    pvc:// bindings, the run's ServiceAccount."""
    secrets = {s for s in (options.pull_secret, run.pull_secret, options.oss_secret) if s}
    secrets |= {ref.secret for ref in run.secret_env.values()}
    bindings = [*run.inputs.values(), *run.outputs.values(), *(m.binding for m in run.models)]
    claims = {b.location for b in bindings if b.scheme == "pvc"}
    accounts = {run.service_account} if run.service_account else set()
    return {"Secret": secrets, "PersistentVolumeClaim": claims, "ServiceAccount": accounts}


def _rendered(case: Case) -> tuple[Run, list[dict[str, Any]]]:
    run = case.run()
    return run, render_run(run, options=case.options)


@pytest.mark.parametrize("case", KUBEDL_CASES, ids=[c.name for c in KUBEDL_CASES])
def test_every_golden_expands_without_problems(case: Case) -> None:
    run, docs = _rendered(case)
    exp = expand(docs)
    assert problems(docs, exp, external=_external(run, case.options)) == []
    assert exp.warnings == []  # no template restartPolicy for KubeDL to overwrite
    assert exp.withheld == []  # every replica gets its pods (the AIMaster gate is open)
    assert len(exp.pods) == run.total_replicas
    services = {s["metadata"]["name"] for s in exp.services}
    kind = job_kind(run.job_type)
    job = job_name(run.name)
    assert services == {
        f"{job}-{role}-{i}"
        for role, res in run.resources.items()
        for i in range(res.replicas)
        if kind.role(role).gets_service
    }


@pytest.mark.parametrize("case", KUBEDL_CASES, ids=[c.name for c in KUBEDL_CASES])
def test_every_replica_sees_exactly_the_contract_env(case: Case) -> None:
    run, docs = _rendered(case)
    exp = expand(docs)
    kind = job_kind(run.job_type)
    ns = docs[-1]["metadata"]["namespace"]
    topology = Topology.cluster(run, ns, job_name(run.name))
    for pod in exp.pods:
        seen = pod.env(kind.container)
        promised: dict[str, Any] = replica_env(run, pod.role, pod.index, topology=topology)
        promised.update(
            {
                k: {"secretKeyRef": {"name": ref.secret, "key": ref.key}}
                for k, ref in run.secret_env.items()
            }
        )
        if run.torch_elastic is not None:  # the agent's address: the pod's, at run time
            promised[POD_IP_ENV] = {"fieldRef": {"fieldPath": "status.podIP"}}
        assert seen == promised, pod.name


def test_elasticbatch_workers_wait_for_the_readiness_annotation() -> None:
    _run, docs = _rendered(next(c for c in CASES if c.name == "kind-elasticbatch"))
    assert docs[-1]["metadata"]["annotations"]["aimaster"] == "ready"
    ungated = copy.deepcopy(docs)
    del ungated[-1]["metadata"]["annotations"]["aimaster"]
    exp = expand(ungated)
    assert exp.withheld == ["Worker"] and {p.role for p in exp.pods} == {"aimaster"}


def test_the_checks_are_not_vacuous() -> None:
    run, docs = _rendered(next(c for c in CASES if c.name == "kind-mpi"))
    ext = _external(run, RenderOptions())
    # trainstack's ConfigMap under the operator's name (as at 8f06a63): a collision, and the
    # launcher's hostfile/kubexec.sh keys would be missing from the rendered one
    old = copy.deepcopy(docs)
    job = old[-1]["metadata"]["name"]
    for doc in old:
        if doc["kind"] == "ConfigMap" and doc["metadata"]["name"].endswith("-trainstack-config"):
            doc["metadata"]["name"] = f"{job}-config"
    for spec in old[-1]["spec"]["mpiReplicaSpecs"].values():
        for v in spec["template"]["spec"]["volumes"]:
            if v["name"] == "config":
                v["configMap"]["name"] = f"{job}-config"
    found = problems(old, expand(old), external=ext)
    assert f"ConfigMap {job}-config is rendered and also created by the operator" in found
    assert any("has no key hostfile" in p for p in found)
    # a launcher without its ServiceAccount; a template restartPolicy
    broken = copy.deepcopy(docs)
    broken = [d for d in broken if d["kind"] != "ServiceAccount"]
    broken[-1]["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["restartPolicy"] = "Never"
    exp = expand(broken)
    assert any("ServiceAccount" in p for p in problems(broken, exp, external=ext))
    assert exp.warnings and exp.warnings[0].startswith("Worker: SettedPodTemplateRestartPolicy")


def test_the_mpi_launcher_can_exec_into_workers() -> None:
    """KubeDL's kubexec.sh runs `kubectl exec` from the launcher; no KubeDL role grants it."""
    run, docs = _rendered(next(c for c in CASES if c.name == "kind-mpi"))
    exp = expand(docs)
    account = exp.pod("launcher", 0).spec["serviceAccountName"]
    binding = next(d for d in docs if d["kind"] == "RoleBinding")
    role = next(d for d in docs if d["kind"] == "Role")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account, "namespace": docs[-1]["metadata"]["namespace"]}
    ]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    rules = {(r, v) for rule in role["rules"] for r in rule["resources"] for v in rule["verbs"]}
    assert {("pods", "get"), ("pods", "list"), ("pods", "watch"), ("pods/exec", "create")} <= rules
    assert "serviceAccountName" not in exp.pod("worker", 0).spec
    assert run.job_type is JobType.MPI


EXAMPLE_RUNS = sorted((Path(__file__).parents[2] / "components").glob("*/runs/*.yaml"))


@pytest.mark.parametrize("path", EXAMPLE_RUNS, ids=lambda p: f"{p.parts[-3]}/{p.name}")
def test_every_shipped_example_expands_without_problems(path: Path) -> None:
    run = load_run(path)
    options = RenderOptions(local_cluster=True)
    docs = render_run(run, options=options)
    exp = expand(docs)
    assert problems(docs, exp, external=_external(run, options)) == []
    assert exp.warnings == [] and exp.withheld == []
    kind = job_kind(run.job_type)
    topology = Topology.cluster(run, docs[-1]["metadata"]["namespace"], job_name(run.name))
    for pod in exp.pods:
        promised: dict[str, Any] = replica_env(run, pod.role, pod.index, topology=topology)
        promised.update(
            {
                k: {"secretKeyRef": {"name": ref.secret, "key": ref.key}}
                for k, ref in run.secret_env.items()
            }
        )
        assert pod.env(kind.container) == promised, pod.name
