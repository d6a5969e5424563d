"""The pod a TrainJob's trainer job runs on each of its nodes, as Trainer v2.3.0 builds it from
the TrainJob and one of trainstack's ClusterTrainingRuntimes — what `policy check` weighs (quota,
fit, the pod guard) where a KubeDL job carries its pod templates itself.

- the runtime's pod template: restartPolicy and, for a runtime installed at a priority, that
  priority's class (trainstack.infra.platform.trainer_runtimes; `Runtime.name_at`);
- its `node` container takes spec.trainer's image, command, args, env and resourcesPerNode
  (Trainer v2.3.0 pkg/runtime/framework/plugins/jobset/builder.go:112-141);
- the runtime patch's pod fields and the `node` container patch's volumeMounts
  (pkg/runtime/framework/plugins/jobset/jobset.go:150-215);
- numNodes such pods (the torch and XGBoost plugins size the trainer job by it).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from trainstack.platformnames import PRIORITIES, priority_class_name
from trainstack.trainer.mpi import TRAINING_RUNTIME_KIND, node_count
from trainstack.trainer.record import Runtime
from trainstack.trainer.restart import RUNTIME_FAILURE_POLICY
from trainstack.trainer.runtimes import (
    ANCESTOR_LABEL,
    ANCESTOR_TRAINER,
    NODE,
    RUNTIMES,
    TRAINJOB_API_VERSION,
    TRAINJOB_KIND,
)

# The PodSpecPatch fields a runtime patch may set that land on the pod as they are.
_PATCHED = (
    "serviceAccountName",
    "securityContext",
    "imagePullSecrets",
    "nodeSelector",
    "affinity",
    "tolerations",
    "schedulingGates",
    "terminationGracePeriodSeconds",
    "volumes",
)


def is_train_job(props: Mapping[str, Any]) -> bool:
    return props.get("apiVersion") == TRAINJOB_API_VERSION and props.get("kind") == TRAINJOB_KIND


def is_training_runtime(props: Mapping[str, Any]) -> bool:
    """A namespaced TrainingRuntime: an MPI run's own, which holds its pod templates whole."""
    return (
        props.get("apiVersion") == TRAINJOB_API_VERSION
        and props.get("kind") == TRAINING_RUNTIME_KIND
    )


def runtime_pods(props: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any], int]]:
    """(where the pod comes from, the pod spec, how many) for each replicated job of a run's own
    MPI TrainingRuntime, as its TrainJob (which carries no pods) makes them: the trainer job one
    pod, the `node` job `node_count` (trainstack.trainer.mpi). The pods are weighed here, at the
    runtime, and not again at the TrainJob (`node_pods` yields nothing for it)."""
    spec = props.get("spec")
    if not isinstance(spec, Mapping):
        return
    policy = spec.get("mlPolicy") or {}
    nodes = policy.get("numNodes", 1)
    as_node = bool((policy.get("mpi") or {}).get("runLauncherAsNode"))
    jobs = ((spec.get("template") or {}).get("spec") or {}).get("replicatedJobs") or ()
    for i, rjob in enumerate(jobs):
        template = rjob.get("template") or {}
        pod = ((template.get("spec") or {}).get("template") or {}).get("spec")
        if not isinstance(pod, Mapping):
            continue
        labels = (template.get("metadata") or {}).get("labels") or {}
        if labels.get(ANCESTOR_LABEL) == ANCESTOR_TRAINER:
            count = 1
        elif rjob.get("name") == NODE and isinstance(nodes, int):
            count = node_count(nodes, as_node)
        else:
            count = int(rjob.get("replicas", 1))
        yield (
            f"spec.template.spec.replicatedJobs[{i}].template.spec.template.spec",
            dict(pod),
            count,
        )


def runtime_named(name: str) -> tuple[Runtime, int | None] | None:
    """The record and priority of the ClusterTrainingRuntime `name` (None: not one of ours)."""
    for rt in RUNTIMES.values():
        for priority in (None, *PRIORITIES):
            if rt.name_at(priority) == name:
                return rt, priority
    return None


def node_pods(props: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any], int]]:
    """(where the pod comes from, the pod spec, how many) for a TrainJob's trainer job; nothing
    for a TrainJob whose runtime is not one of trainstack's (the guard's matter, not a fit's)."""
    spec = props.get("spec")
    if not isinstance(spec, Mapping):
        return
    ref = spec.get("runtimeRef")
    found = runtime_named(str(ref.get("name"))) if isinstance(ref, Mapping) else None
    trainer = spec.get("trainer")
    if found is None or not isinstance(trainer, Mapping):
        return
    rt, priority = found
    job = rt.trainer_job
    pod: dict[str, Any] = {"restartPolicy": RUNTIME_FAILURE_POLICY.pod_restart_policy}
    if priority is not None:
        pod["priorityClassName"] = priority_class_name(priority)
    node: dict[str, Any] = {"name": rt.container}
    for field in ("image", "command", "args", "env"):
        if trainer.get(field) is not None:
            node[field] = trainer[field]
    if trainer.get("resourcesPerNode") is not None:
        node["resources"] = trainer["resourcesPerNode"]
    for patch in spec.get("runtimePatches") or ():
        jobs = (
            ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
        ).get("replicatedJobs") or ()
        for rjob in jobs:
            if rjob.get("name") != job.name:
                continue
            patched = ((rjob.get("template") or {}).get("spec") or {}).get("template") or {}
            fields = patched.get("spec") or {}
            pod.update({k: fields[k] for k in _PATCHED if fields.get(k) is not None})
            for c in fields.get("containers") or ():
                if c.get("name") == rt.container and c.get("volumeMounts"):
                    node["volumeMounts"] = c["volumeMounts"]
    pod["containers"] = [node]
    count = trainer.get("numNodes", 1)
    yield "spec.trainer", pod, int(count) if isinstance(count, int) else 1
