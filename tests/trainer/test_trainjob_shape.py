"""Every TrainJob trainstack renders has the shape Kubeflow Trainer v2.3.0's CRD requires: the
field names and types of pkg/apis/trainer/v1alpha1/trainjob_types.go (lines cited below), its
required fields, list keys and limits, and what its webhook refuses in a runtime patch
(pkg/runtime/framework/plugins/jobset/jobset.go:175-206). No CRD file is committed here, so the
shape is written out from the Go types; an unknown field would be pruned by the API server
without a word, so one is an error here."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.render.conftest import CASES, Case
from trainstack.render import render_run
from trainstack.trainer import RUNTIMES, TRAINJOB_KIND

TRAINER_CASES = [c for c in CASES if c.options.operator.value == "trainer"]

# A field's JSON type, or a nested shape (a dict of fields), or a list of either.
STR, INT, OBJ = str, int, dict
# corev1 shapes are the API server's own; only their being objects or lists is checked here.
ENV_VAR = {"name": STR, "value": STR, "valueFrom": OBJ}
CONTAINER_PATCH = {  # trainjob_types.go:465-494
    "name": STR,
    "env": [ENV_VAR],
    "volumeMounts": [OBJ],
    "securityContext": OBJ,
}
POD_SPEC_PATCH = {  # trainjob_types.go:389-463
    "serviceAccountName": STR,
    "volumes": [OBJ],
    "initContainers": [CONTAINER_PATCH],
    "containers": [CONTAINER_PATCH],
    "imagePullSecrets": [{"name": STR}],
    "securityContext": OBJ,
    "nodeSelector": OBJ,
    "affinity": OBJ,
    "tolerations": [OBJ],
    "schedulingGates": [OBJ],
    "terminationGracePeriodSeconds": INT,
}
META_PATCH = {"labels": OBJ, "annotations": OBJ}  # "Only labels and annotations are allowed."
REPLICATED_JOB_PATCH = {  # trainjob_types.go:345-387
    "name": STR,
    "template": {
        "metadata": META_PATCH,
        "spec": {"template": {"metadata": META_PATCH, "spec": POD_SPEC_PATCH}},
    },
}
RUNTIME_PATCH = {  # trainjob_types.go:291-343
    "manager": STR,
    "time": STR,
    "trainingRuntimeSpec": {
        "template": {"metadata": META_PATCH, "spec": {"replicatedJobs": [REPLICATED_JOB_PATCH]}}
    },
}
TRAINER = {  # trainjob_types.go:244-289
    "image": STR,
    "command": [STR],
    "args": [STR],
    "env": [ENV_VAR],
    "numNodes": INT,
    "resourcesPerNode": {"requests": OBJ, "limits": OBJ, "claims": [OBJ]},
    "numProcPerNode": INT,
}
SPEC = {  # trainjob_types.go:101-178
    "runtimeRef": {"name": STR, "apiGroup": STR, "kind": STR},
    "initializer": OBJ,
    "trainer": TRAINER,
    "runtimePatches": [RUNTIME_PATCH],
    "suspend": bool,
    "activeDeadlineSeconds": INT,
    "managedBy": STR,
}
TRAIN_JOB = {"apiVersion": STR, "kind": STR, "metadata": OBJ, "spec": SPEC}
# `+required` (trainjob_types.go:105, 162, 300, 351, 471), for the objects that are there.
REQUIRED = {
    "spec": ("runtimeRef",),
    "spec.runtimeRef": ("name",),
    "spec.runtimePatches[]": ("manager",),
    "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[]": ("name",),
    "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec"
    ".template.spec.containers[]": ("name",),
}
# `+listType=map` lists and their key: no two entries may share it.
MAP_LISTS = {
    "spec.trainer.env[]": "name",
    "spec.runtimePatches[]": "manager",
    "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[]": "name",
}
POD = (
    "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec"
    ".template.spec"
)
MAP_LISTS |= {
    f"{POD}.volumes[]": "name",
    f"{POD}.containers[]": "name",
    f"{POD}.containers[].volumeMounts[]": "name",
    f"{POD}.imagePullSecrets[]": "name",
}
# +kubebuilder:validation:MaxItems
MAX_ITEMS = {
    "spec.trainer.env[]": 128,
    "spec.trainer.command[]": 128,
    "spec.trainer.args[]": 128,
    "spec.runtimePatches[]": 16,
    f"{POD}.volumes[]": 128,
    f"{POD}.containers[].volumeMounts[]": 128,
    f"{POD}.tolerations[]": 128,
}
# metadata.name: an RFC 1035 label, at most 63 characters (trainjob_types.go:36-37).
NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
# the manager: a domain-prefixed path (jobset.go:176, validation.IsDomainPrefixedPath)
MANAGER = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/\S+$")


def _problems(value: Any, shape: Any, path: str) -> list[str]:
    if isinstance(shape, list):
        if not isinstance(value, list):
            return [f"{path}: a {type(value).__name__}, not a list"]
        found = []
        where = path + "[]"
        if where in MAX_ITEMS and len(value) > MAX_ITEMS[where]:
            found.append(f"{where}: {len(value)} items, at most {MAX_ITEMS[where]}")
        if where in MAP_LISTS:
            keys = [v.get(MAP_LISTS[where]) for v in value]
            if len(keys) != len(set(keys)):
                found.append(f"{where}: {MAP_LISTS[where]} twice in {keys}")
        return found + [p for v in value for p in _problems(v, shape[0], where)]
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return [f"{path}: a {type(value).__name__}, not an object"]
        found = [f"{path}.{k}: no such field" for k in value if k not in shape]
        found += [f"{path}: {k} is required" for k in REQUIRED.get(path, ()) if k not in value]
        return found + [
            p for k, v in value.items() if k in shape for p in _problems(v, shape[k], f"{path}.{k}")
        ]
    if shape is INT and (isinstance(value, bool) or not isinstance(value, int)):
        return [f"{path}: {value!r} is not an integer"]
    if not isinstance(value, shape):
        return [f"{path}: {value!r} is not a {shape.__name__}"]
    return []


def _train_job(case: Case) -> dict[str, Any]:
    (job,) = [d for d in render_run(case.run(), options=case.options) if d["kind"] == TRAINJOB_KIND]
    return job


@pytest.mark.parametrize("case", TRAINER_CASES, ids=[c.name for c in TRAINER_CASES])
def test_a_rendered_trainjob_has_the_shape_the_crd_requires(case: Case) -> None:
    job = _train_job(case)
    problems = [p for k, v in job.items() for p in _problems(v, TRAIN_JOB.get(k, object), k)]
    problems += [f"{k}: no such field" for k in job if k not in TRAIN_JOB]
    assert not problems, "\n".join(problems)
    name = job["metadata"]["name"]
    assert NAME.match(name) and len(name) <= 63
    assert job["spec"].get("activeDeadlineSeconds", 1) >= 1  # +kubebuilder:validation:Minimum=1


# An MPI run's TrainJob names its own runtime and carries no patch (tests/trainer/test_mpi_runtime).
PATCHED_CASES = [c for c in TRAINER_CASES if not RUNTIMES[c.run().component.job_type].per_run]


@pytest.mark.parametrize("case", PATCHED_CASES, ids=[c.name for c in PATCHED_CASES])
def test_its_patch_passes_the_webhook(case: Case) -> None:
    job = _train_job(case)
    rt = RUNTIMES[case.run().component.job_type]
    jobs = {j.name for j in rt.replicated_jobs}
    (patch,) = job["spec"]["runtimePatches"]
    assert MANAGER.match(patch["manager"]), patch["manager"]
    for rjob in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
        # a replicated job the runtime has, containers its pods have, no env on `node`
        assert rjob["name"] in jobs
        pod = rjob["template"]["spec"]["template"]["spec"]
        assert "initContainers" not in pod  # the shipped runtimes have none to patch
        for container in pod["containers"]:
            assert container["name"] == rt.container and "env" not in container
    # the runtime's reserved names are never set (the torch and XGBoost plugins refuse them)
    assert not {e["name"] for e in job["spec"]["trainer"]["env"]} & rt.reserved


def test_the_shape_check_finds_what_the_api_server_would_prune() -> None:
    job = _train_job(TRAINER_CASES[0])
    job["spec"]["trainer"]["numNode"] = 4
    job["spec"]["runtimeRef"].pop("name")
    problems = [p for k, v in job.items() for p in _problems(v, TRAIN_JOB[k], k)]
    assert "spec.trainer.numNode: no such field" in problems
    assert "spec.runtimeRef: name is required" in problems
