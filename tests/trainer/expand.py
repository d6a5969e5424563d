"""What Kubeflow Trainer v2.3.0 and JobSet v0.12.0 make of a rendered TrainJob: the JobSet's pods,
built the way the controllers build them, so a test can put every pod a TrainJob would create
through the platform's admission policies.

Only what decides a pod's shape is modelled:
- the runtime's replicated job templates are the start (Trainer v2.3.0
  pkg/runtime/framework/plugins/jobset/builder.go:38-60);
- the trainer job's `node` container takes the TrainJob's image, command, args and env, and its
  resourcesPerNode (builder.go:112-141; pkg/runtime/framework/plugins/plainml/plainml.go);
- each runtime patch merges into its replicated job's pod template: labels, the PodSpecPatch's
  fields, and container patches (env, volumeMounts, securityContext) into the container of that
  name (pkg/runtime/framework/plugins/jobset/jobset.go:150-215, applied as a server-side apply
  of the patch: lists keyed by name merge, scalars replace);
- the plugin's variables on the trainer container (trainstack.trainer.plugin);
- one pod per node (completion index 0 .. numNodes-1), named as JobSet names them
  (trainstack.trainer.pod_hostname).

A TrainJob on an MPI run's own TrainingRuntime (`runtimeRef.kind: TrainingRuntime`) takes every
pod template from that runtime, found among the same manifests; the MPI plugin adds the SSH keys'
Secret volume to each `node` container and, on the launcher's, the hostfile's ConfigMap and the
OMPI_* variables (Trainer v2.3.0 pkg/runtime/framework/plugins/mpi/mpi.go:141-228); the `node`
job runs numNodes - 1 pods with runLauncherAsNode, the launcher one (mpi.go:116-125).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tests.trainer.test_trainjob_shape import POD_SPEC_PATCH
from trainstack.infra.platform.trainer_runtimes import installed, runtime_spec
from trainstack.trainer import TRAINJOB_KIND, pod_address, pod_hostname
from trainstack.trainer.mpi import TRAINING_RUNTIME_KIND, node_count
from trainstack.trainer.plugin import Node, injected_env
from trainstack.trainer.record import Runtime

# What a PodSpecPatch may set that lands on the pod as it is: the CRD's fields as the shape test
# records them from the Go types, less the lists merged by name.
_POD_FIELDS = tuple(
    k for k in POD_SPEC_PATCH if k not in ("volumes", "containers", "initContainers")
)


@dataclass(frozen=True)
class TrainPod:
    name: str
    job: str  # the replicated job
    labels: dict[str, str]
    spec: dict[str, Any]


def find_train_job(manifests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    (job,) = [dict(m) for m in manifests if m.get("kind") == TRAINJOB_KIND]
    return job


def _runtime(name: str) -> tuple[Runtime, dict[str, Any]]:
    """The installed ClusterTrainingRuntime a TrainJob names: its record and its spec as the
    platform installs it."""
    for entry in installed():
        if entry.name == name:
            return entry.runtime, runtime_spec(entry.runtime, entry.priority)
    raise KeyError(f"the platform installs no ClusterTrainingRuntime {name!r}")


def _merge_named(have: list[dict[str, Any]], patch: Sequence[Mapping[str, Any]]) -> None:
    by_name = {item["name"]: item for item in have}
    for item in patch:
        if item["name"] in by_name:
            by_name[item["name"]].update(copy.deepcopy(dict(item)))
        else:
            have.append(copy.deepcopy(dict(item)))


def _apply_patch(pod: dict[str, Any], labels: dict[str, str], patch: Mapping[str, Any]) -> None:
    template = patch.get("template", {}).get("spec", {}).get("template", {})
    labels.update(template.get("metadata", {}).get("labels") or {})
    spec = template.get("spec") or {}
    for field in _POD_FIELDS:
        if spec.get(field) is not None:
            pod[field] = copy.deepcopy(spec[field])
    if spec.get("volumes"):
        _merge_named(pod.setdefault("volumes", []), spec["volumes"])
    for key in ("containers", "initContainers"):
        for cpatch in spec.get(key) or ():
            (container,) = [c for c in pod.get(key, []) if c["name"] == cpatch["name"]]
            for field in ("env", "volumeMounts"):
                if cpatch.get(field):
                    _merge_named(container.setdefault(field, []), cpatch[field])
            if cpatch.get("securityContext") is not None:
                container["securityContext"] = copy.deepcopy(cpatch["securityContext"])


def _own_runtime_pods(
    train_job: Mapping[str, Any], manifests: Sequence[Mapping[str, Any]]
) -> list[TrainPod]:
    name = train_job["metadata"]["name"]
    ref = train_job["spec"]["runtimeRef"]
    (runtime,) = [
        m
        for m in manifests
        if m.get("kind") == TRAINING_RUNTIME_KIND
        and m["metadata"]["name"] == ref["name"]
        and m["metadata"].get("namespace") == train_job["metadata"].get("namespace")
    ]
    policy = runtime["spec"]["mlPolicy"]
    mpi = policy["mpi"]
    num_nodes = train_job["spec"].get("trainer", {}).get("numNodes", policy.get("numNodes", 1))
    pods: list[TrainPod] = []
    for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        template = rjob["template"]
        launcher = (template.get("metadata") or {}).get("labels", {}).get(
            "trainer.kubeflow.org/trainjob-ancestor-step"
        ) == "trainer"
        base = copy.deepcopy(template["spec"]["template"]["spec"])
        labels = {
            **(train_job["metadata"].get("labels") or {}),
            **(template["spec"]["template"].get("metadata", {}).get("labels") or {}),
        }
        volumes = base.setdefault("volumes", [])
        volumes.append({"name": "mpi-ssh-auth", "secret": {"secretName": f"{name}-mpi-ssh-auth"}})
        if launcher:
            volumes.append({"name": "mpi-hostfile", "configMap": {"name": f"{name}-mpi-hostfile"}})
        for c in base["containers"]:
            if c["name"] != "node":
                continue
            mounts = c.setdefault("volumeMounts", [])
            mounts.append({"name": "mpi-ssh-auth", "mountPath": mpi["sshAuthMountPath"]})
            if launcher:
                mounts.append({"name": "mpi-hostfile", "mountPath": "/etc/mpi"})
                c.setdefault("env", []).append(
                    {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"}
                )
        count = 1 if launcher else node_count(num_nodes, bool(mpi.get("runLauncherAsNode")))
        pods += [
            TrainPod(pod_hostname(name, rjob["name"], 0, i), rjob["name"], labels, base)
            for i in range(count)
        ]
    return pods


def expand(manifests: Sequence[Mapping[str, Any]]) -> list[TrainPod]:
    """Every pod of the JobSet a rendered TrainJob makes."""
    train_job = find_train_job(manifests)
    name = train_job["metadata"]["name"]
    spec = train_job["spec"]
    if spec["runtimeRef"].get("kind") == TRAINING_RUNTIME_KIND:
        return _own_runtime_pods(train_job, manifests)
    rt, runtime = _runtime(spec["runtimeRef"]["name"])
    trainer = spec["trainer"]
    num_nodes = trainer["numNodes"]
    patches = {
        job["name"]: job
        for p in spec.get("runtimePatches") or ()
        for job in p["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    }
    pods: list[TrainPod] = []
    for rjob in runtime["template"]["spec"]["replicatedJobs"]:
        job = rt.job(rjob["name"])
        base = copy.deepcopy(rjob["template"]["spec"]["template"]["spec"])
        labels: dict[str, str] = dict(train_job["metadata"].get("labels") or {})
        if job.trainer_ancestor:
            (node,) = [c for c in base["containers"] if c["name"] == rt.container]
            for field in ("image", "command", "args"):
                if trainer.get(field) is not None:
                    node[field] = list(trainer[field]) if field != "image" else trainer[field]
            if trainer.get("resourcesPerNode") is not None:
                node["resources"] = copy.deepcopy(trainer["resourcesPerNode"])
            node["env"] = [copy.deepcopy(e) for e in trainer.get("env") or ()]
            if rt.port is not None:
                node["ports"] = [{"containerPort": rt.port}]
        if job.name in patches:
            _apply_patch(base, labels, patches[job.name])
        count = num_nodes if job.trainer_ancestor else 1
        for index in range(count):
            pod = copy.deepcopy(base)
            if job.trainer_ancestor and rt.port is not None:
                requests = (trainer.get("resourcesPerNode") or {}).get("limits") or {}
                gpu = int(requests.get("nvidia.com/gpu", 0))
                cpu = float(requests["cpu"]) if "cpu" in requests else None
                plugin = injected_env(
                    rt,
                    Node(
                        num_nodes=num_nodes,
                        rank=index,
                        master_addr=pod_address(name, job.name, 0),
                        master_port=rt.port,
                        cpu=cpu,
                        gpu=gpu,
                        asks_resources=bool(requests),
                    ),
                )
                (node,) = [c for c in pod["containers"] if c["name"] == rt.container]
                node["env"] += [{"name": k, "value": v} for k, v in plugin.items()]
            pods.append(
                TrainPod(pod_hostname(name, job.name, 0, index), job.name, dict(labels), pod)
            )
    return pods
