"""Every rendered object is valid for its kind: core kinds against the Kubernetes schema
(kubernetes_validate, strict), KubeDL kinds by their replica map, replica types and container
name, with each replica's pod template validated as a core PodTemplate."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

from tests.render.conftest import KUBEDL_CASES, Case
from trainstack.render import render_run
from trainstack.trainer import TRAINJOB_KIND

K8S_VERSION = "1.30"
CORE = {"v1", "batch/v1", "rbac.authorization.k8s.io/v1"}
# KubeDL v0.5: replica map, allowed replica types, default container name.
KUBEDL = {
    "TFJob": (
        "training.kubedl.io/v1alpha1",
        "tfReplicaSpecs",
        {"PS", "Worker", "Chief", "Master", "Evaluator"},
        "tensorflow",
    ),
    "PyTorchJob": (
        "training.kubedl.io/v1alpha1",
        "pytorchReplicaSpecs",
        {"Master", "Worker", "AIMaster"},
        "pytorch",
    ),
    "XGBoostJob": (
        "training.kubedl.io/v1alpha1",
        "xgbReplicaSpecs",
        {"Master", "Worker"},
        "xgboostjob",
    ),
    "MPIJob": ("training.kubedl.io/v1alpha1", "mpiReplicaSpecs", {"Launcher", "Worker"}, "mpi"),
    "ElasticBatchJob": (
        "inference.kubedl.io/v1alpha1",
        "elasticBatchReplicaSpecs",
        {"AIMaster", "Worker"},
        "elasticbatch",
    ),
}
RUN_POLICY = {
    "cleanPodPolicy",
    "ttlSecondsAfterFinished",
    "activeDeadlineSeconds",
    "backoffLimit",
    "schedulingPolicy",
}
REQUIRED = {"PyTorchJob": {"Master"}, "XGBoostJob": {"Master"}, "MPIJob": {"Launcher", "Worker"}}


def _validate(doc: dict[str, Any]) -> None:
    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def _check_kubedl(doc: dict[str, Any]) -> None:
    api, key, types, container = KUBEDL[doc["kind"]]
    assert doc["apiVersion"] == api
    spec = doc["spec"]
    replicas = spec[key]
    assert replicas and set(replicas) <= types, set(replicas)
    assert REQUIRED.get(doc["kind"], set()) <= set(replicas)
    if doc["kind"] == "MPIJob":
        assert RUN_POLICY.isdisjoint(spec), "MPIJob keeps its run policy under spec.runPolicy"
        assert set(spec["runPolicy"]) <= RUN_POLICY
    else:
        assert "runPolicy" not in spec and set(spec) - {key} <= RUN_POLICY
    for rtype, r in replicas.items():
        assert isinstance(r["replicas"], int) and r["replicas"] >= 1, rtype
        assert r["restartPolicy"] in {"Always", "OnFailure", "Never", "ExitCode"}
        assert set(r) == {"replicas", "restartPolicy", "template"}
        names = [c["name"] for c in r["template"]["spec"]["containers"]]
        assert container in names, (rtype, names)
        _validate(
            {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": f"{doc['metadata']['name']}-{rtype.lower()}"},
                "template": r["template"],
            }
        )


def test_every_object_validates(case: Case) -> None:
    for doc in render_run(case.run(), options=case.options):
        if doc["apiVersion"] in CORE:
            _validate(doc)
        elif doc["kind"] == TRAINJOB_KIND:
            continue  # no pod template of its own: tests/trainer/test_trainjob_shape.py
        elif doc["kind"] == "TrainingRuntime":  # its shape: tests/trainer/test_mpi_runtime.py
            for job in doc["spec"]["template"]["spec"]["replicatedJobs"]:
                _validate(
                    {
                        "apiVersion": "v1",
                        "kind": "PodTemplate",
                        "metadata": {"name": f"{doc['metadata']['name']}-{job['name']}"},
                        "template": job["template"]["spec"]["template"],
                    }
                )
        else:
            _check_kubedl(doc)


# A TrainJob carries no pod template of its own; its shape check shows it is not vacuous
# (tests/trainer/test_trainjob_shape.py).
@pytest.mark.parametrize("case", KUBEDL_CASES, ids=[c.name for c in KUBEDL_CASES])
def test_validation_catches_a_broken_template(case: Case) -> None:
    # The checks are not vacuous: an unknown field in a pod template fails them.
    docs = render_run(case.run(), options=case.options)
    job = docs[-1]
    pod = (
        job["spec"]["template"]
        if job["kind"] == "Job"
        else next(
            iter(next(v for k, v in job["spec"].items() if k.endswith("ReplicaSpecs")).values())
        )["template"]
    )
    pod["spec"]["containers"][0]["imagePullPolicy"] = {"not": "a string"}
    with pytest.raises(kubernetes_validate.ValidationError):
        if job["kind"] == "Job":
            _validate(job)
        else:
            _check_kubedl(job)
