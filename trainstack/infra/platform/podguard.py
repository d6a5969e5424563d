"""Deny by default: a pod in a team namespace may take only the shapes trainstack renders.

Pod Security ``baseline`` refuses hostPath among volume types but admits every other inline
source (nfs, iscsi, cephfs, rbd, csi with any driver, ...), ``nodeName``, any toleration and any
PriorityClass, so a team's Job could mount the platform NAS's root or land on the system pool.
One ValidatingAdmissionPolicy per team namespace (matched by the namespace's name label, so it
applies to whoever creates the pod: the team, KubeDL or the Job controller) admits only:

- volume sources the renderer writes or KubeDL adds (trainstack/render/podshape.py), plus the
  namespace-local ones Kubernetes itself adds or that reach nothing outside the namespace:
  ``projected`` (the ServiceAccount admission plugin's ``kube-api-access-*`` volume is added
  before validating admission runs), ``secret``, ``downwardAPI``, ``ephemeral`` (a claim in the
  namespace, counted by its quota); ``hostPath`` only where the environment opts in
  (``hostPathVolumes``: one user's kind); a memory-backed emptyDir only with a ``sizeLimit``;
- tolerations the renderer writes (the GPU and spot pools' taints) and the two the
  DefaultTolerationSeconds admission plugin adds, each matched field by field: a toleration with
  no key, or of the system pool's ``CriticalAddonsOnly``, is refused;
- ``priorityClassName`` among the team's own classes (``trainstack-priority-1`` up to its
  ``maxPriority``): ``system-node-critical`` and ``system-cluster-critical`` are refused;
- no ``nodeName`` (it skips the scheduler and every taint), no host namespaces, host aliases,
  runtime class or resource claims; no privileged container, added capability, host port or raw
  block device.

A volume source is allowed by naming it (``has(v.configMap) || ...``) rather than by refusing
known-bad ones: the API server's validation, which runs before validating admission, lets a
volume carry exactly one source, so a source added to Kubernetes later is refused until trainstack
renders it. The same checks run on the pod templates of Jobs and of every KubeDL kind the platform
enables, and on a Trainer environment on a TrainJob's runtime patches (which must name one of the
platform's runtimes or a TrainingRuntime of its namespace) and on a TrainingRuntime's pod
templates (a team makes one for an MPI run), so a bad job is refused when it is submitted, with
the message, instead of pod by pod;
a KubeDL job annotated for host networking (``kubedl.io/network-mode: host``) is refused there
too. Every expression is known at plan time, so ``trainstack plan`` shows the whole policy, and
``trainstack policy check`` evaluates the same CEL on what a run renders (the ``pod-shape``
rule), so a platform's template override that adds what the policy refuses is caught before
``pulumi up``. podpolicy.py registers it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trainstack import platformnames as names
from trainstack.infra.platform.kubedl_source import KUBEDL_CRDS
from trainstack.kubedl import KINDS, KUBEDL_NETWORK_MODE_ANNOTATION
from trainstack.render.options import RenderOptions
from trainstack.render.podshape import HOST_PATH_SOURCE, RENDERED_VOLUME_SOURCES, tolerations
from trainstack.trainer.mpi import TRAINING_RUNTIME_KIND
from trainstack.trainer.runtimes import RUNTIME_KIND, TRAINJOB_API_VERSION, installed

# The runtimes the platform installs on a Trainer environment, by name.
TRAINER_RUNTIMES: tuple[str, ...] = tuple(rt.name_at(p) for rt, p in installed())

POD_GUARD = "trainstack-team-pods"

# Added by the API server or reaching nothing outside the pod's namespace.
NAMESPACED_VOLUME_SOURCES = ("projected", "secret", "downwardAPI", "ephemeral")
PROJECTED_SOURCES = ("serviceAccountToken", "configMap", "downwardAPI", "secret")
# The DefaultTolerationSeconds admission plugin's own (plugin/pkg/admission/
# defaulttolerationseconds/admission.go: 300 s for not-ready and unreachable, NoExecute).
ADMISSION_TOLERATIONS: tuple[Mapping[str, Any], ...] = tuple(
    {"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300}
    for k in ("not-ready", "unreachable")
)  # fmt: skip
_TOLERATION_FIELDS = ("key", "operator", "value", "effect", "tolerationSeconds")


@dataclass(frozen=True)
class Workload:
    """A resource whose pod specs the guard checks: its API group, version, plural, the
    operations checked, and the CEL list of its pod specs."""

    group: str
    version: str
    plural: str
    operations: tuple[str, ...]
    specs: str


# A TrainJob's pod specs are its runtime patches' (spec.runtimePatches[].trainingRuntimeSpec
# .template.spec.replicatedJobs[].template.spec.template.spec): at most 16 patches (Trainer v2.3.0
# pkg/apis/trainer/v1alpha1/trainjob_types.go:157-160, MaxItems), each spelled out, as the API
# server's CEL has no flatten for the list of lists a map over them would make. Every field of a
# patch is optional, so each step is checked.
MAX_RUNTIME_PATCHES = 16
_PATCH_SPECS = (
    "(has(P.trainingRuntimeSpec) && has(P.trainingRuntimeSpec.template) && "
    "has(P.trainingRuntimeSpec.template.spec) && "
    "has(P.trainingRuntimeSpec.template.spec.replicatedJobs) ? "
    "P.trainingRuntimeSpec.template.spec.replicatedJobs.filter(j, has(j.template) && "
    "has(j.template.spec) && has(j.template.spec.template) && has(j.template.spec.template.spec))"
    ".map(j, j.template.spec.template.spec) : [])"
)
TRAINJOB_SPECS = (
    "(!has(object.spec.runtimePatches) ? [] : "
    + " + ".join(
        f"(size(object.spec.runtimePatches) > {i} ? "
        + _PATCH_SPECS.replace("P.", f"object.spec.runtimePatches[{i}].")
        + " : [])"
        for i in range(MAX_RUNTIME_PATCHES)
    )
    + ")"
)


# A namespaced TrainingRuntime's pod specs: its JobSet template's replicated jobs' (Trainer v2.3.0
# pkg/apis/trainer/v1alpha1/trainingruntime_types.go:106-133; JobSet v0.12.0
# api/jobset/v1alpha2/jobset_types.go ReplicatedJob.template, a batch/v1 JobTemplateSpec).
TRAINING_RUNTIME_SPECS = (
    "(has(object.spec) && has(object.spec.template) && has(object.spec.template.spec) && "
    "has(object.spec.template.spec.replicatedJobs) ? "
    "object.spec.template.spec.replicatedJobs.filter(j, has(j.template) && "
    "has(j.template.spec) && has(j.template.spec.template) && has(j.template.spec.template.spec))"
    ".map(j, j.template.spec.template.spec) : [])"
)


def workloads(kubedl_kinds: Sequence[str], *, trainjobs: bool = False) -> list[Workload]:
    """Pods, batch Jobs, each KubeDL kind the platform installs that trainstack renders (its
    replica map), and on a Trainer environment TrainJobs (their runtime patches' pod specs: the
    rest of a node's pod is the runtime's) and the TrainingRuntimes a team makes of its own (an
    MPI run's: every pod template whole)."""
    out = [
        Workload("", "v1", "pods", ("CREATE",), "[object.spec]"),
        Workload("batch", "v1", "jobs", ("CREATE", "UPDATE"), "[object.spec.template.spec]"),
    ]
    if trainjobs:
        group, _, version = TRAINJOB_API_VERSION.partition("/")
        out.append(Workload(group, version, "trainjobs", ("CREATE", "UPDATE"), TRAINJOB_SPECS))
        out.append(
            Workload(
                group, version, "trainingruntimes", ("CREATE", "UPDATE"), TRAINING_RUNTIME_SPECS
            )
        )
    by_kind = {k.kind: k for k in KINDS.values() if k.replicas_key is not None}
    # A kind trainstack does not render has no replica map it knows: its pods are still
    # checked, as every pod in the namespace is.
    for kind in sorted(k for k in kubedl_kinds if k in by_kind):
        group, _, rest = KUBEDL_CRDS[kind].partition("_")
        key = by_kind[kind].replicas_key
        version = by_kind[kind].api_version.rpartition("/")[2]
        specs = f"object.spec.{key}.map(r, object.spec.{key}[r].template.spec)"
        out.append(
            Workload(group, version, rest.removesuffix(".yaml"), ("CREATE", "UPDATE"), specs)
        )
    return out


@dataclass(frozen=True)
class PodRules:
    """What one team's pods may hold."""

    namespace: str
    volume_sources: tuple[str, ...]
    tolerations: tuple[Mapping[str, Any], ...]
    priority_classes: tuple[str, ...]


def pod_rules(
    namespace: str, max_priority: int, host_path: bool, options: RenderOptions | None = None
) -> PodRules:
    """What a team's pods may hold: its namespace, its priority cap, whether the environment
    admits host paths (one user's kind)."""
    sources: tuple[str, ...] = (*RENDERED_VOLUME_SOURCES, *NAMESPACED_VOLUME_SOURCES)
    if host_path:
        sources += (HOST_PATH_SOURCE,)
    return PodRules(
        namespace=namespace,
        volume_sources=sources,
        tolerations=(*tolerations(options or RenderOptions()), *ADMISSION_TOLERATIONS),
        priority_classes=tuple(
            names.priority_class_name(p) for p in names.PRIORITIES if p <= max_priority
        ),
    )


def evaluated_policy(rules: PodRules, loads: Sequence[Workload]) -> dict[str, Any]:
    """The policy's checks as the API server reads them (camelCase), for evaluating it here."""
    return {"variables": variables(loads), "validations": validations(rules)}


def _cel(value: Any) -> str:
    # JSON string and list literals are valid CEL literals for the plain values used here.
    return json.dumps(value)


def _any_of(item: str, fields: Sequence[str]) -> str:
    return " || ".join(f"has({item}.{f})" for f in fields)


def _toleration(t: Mapping[str, Any]) -> str:
    """CEL: toleration ``x`` is exactly ``t`` (a missing effect or value would widen it)."""
    parts = [
        f"has(x.{f}) && x.{f} == {_cel(t[f])}" if f in t else f"!has(x.{f})"
        for f in _TOLERATION_FIELDS
    ]
    return "(" + " && ".join(parts) + ")"


def _specs_variable(loads: Sequence[Workload]) -> str:
    """CEL: the pod specs of the request's object, by its resource."""
    expression = "[]"
    for w in reversed(loads):
        expression = (
            f"request.resource.group == {_cel(w.group)} && "
            f"request.resource.resource == {_cel(w.plural)} ? {w.specs} : {expression}"
        )
    return expression


VARIABLES = {
    # A runtime patch's pod spec may name no container (a pod's always does).
    "containers": "variables.specs.map(s, (has(s.containers) ? s.containers : []) + "
    "(has(s.initContainers) ? s.initContainers : []))",
}


def variables(loads: Sequence[Workload]) -> list[dict[str, str]]:
    return [
        {"name": "specs", "expression": _specs_variable(loads)},
        *({"name": k, "expression": v} for k, v in VARIABLES.items()),
    ]


def _runtime_ref(where: str) -> dict[str, str]:
    """The check on a TrainJob's runtimeRef."""
    return {
        # A TrainJob names one of the platform's runtimes (whose pod templates it installs),
        # or a TrainingRuntime: namespaced, so one in its own namespace, whose pod templates
        # this guard checked when it was submitted (an MPI run's own). The kind and group
        # default to the cluster-scoped ClusterTrainingRuntime (Trainer v2.3.0
        # pkg/apis/trainer/v1alpha1/trainjob_types.go:162-177).
        "expression": "request.resource.resource != 'trainjobs' || "
        "(has(object.spec.runtimeRef) && "
        "(!has(object.spec.runtimeRef.apiGroup) || "
        f"object.spec.runtimeRef.apiGroup == {_cel(TRAINJOB_API_VERSION.partition('/')[0])}) "
        "&& (has(object.spec.runtimeRef.kind) && "
        f"object.spec.runtimeRef.kind == {_cel(TRAINING_RUNTIME_KIND)} || "
        "(!has(object.spec.runtimeRef.kind) || "
        f"object.spec.runtimeRef.kind == {_cel(RUNTIME_KIND)}) && "
        f"object.spec.runtimeRef.name in {_cel(list(TRAINER_RUNTIMES))}))",
        "message": f"{where}: a TrainJob's spec.runtimeRef must name one of the platform's "
        f"ClusterTrainingRuntimes ({', '.join(TRAINER_RUNTIMES[:2])}, ...: "
        "`kubectl get clustertrainingruntimes`) or a TrainingRuntime of its namespace",
    }


def validations(rules: PodRules) -> list[dict[str, str]]:
    """Each check a CEL expression over ``variables.specs`` and the message the API server
    returns, naming the field and what is allowed."""
    ns = rules.namespace
    where = f"team namespace {ns}"
    classes = list(rules.priority_classes)
    allowed_tolerations = " || ".join(_toleration(t) for t in rules.tolerations)
    shown_tolerations = "; ".join(
        ", ".join(f"{k}={t[k]}" for k in _TOLERATION_FIELDS if k in t) for t in rules.tolerations
    )
    forbidden_fields = ("nodeName", "hostAliases", "runtimeClassName", "resourceClaims")
    host_namespaces = ("hostNetwork", "hostPID", "hostIPC")
    return [
        {
            "expression": "variables.specs.all(s, !has(s.volumes) || s.volumes.all(v, "
            + _any_of("v", rules.volume_sources)
            + "))",
            "message": f"{where}: spec.volumes may use only "
            + ", ".join(rules.volume_sources)
            + " (what trainstack renders); nfs, csi, iscsi, hostPath and every other source "
            "are refused — mount data through a run's oss:// or nas:// bindings",
        },
        {
            "expression": "variables.specs.all(s, !has(s.volumes) || s.volumes.all(v, "
            "!has(v.emptyDir) || !has(v.emptyDir.medium) || v.emptyDir.medium != 'Memory' "
            "|| has(v.emptyDir.sizeLimit)))",
            "message": f"{where}: an emptyDir with medium Memory needs a sizeLimit "
            "(spec.volumes[].emptyDir.sizeLimit)",
        },
        {
            "expression": "variables.specs.all(s, !has(s.volumes) || s.volumes.all(v, "
            "!has(v.projected) || !has(v.projected.sources) || v.projected.sources.all(p, "
            + _any_of("p", PROJECTED_SOURCES)
            + ")))",
            "message": f"{where}: a projected volume may hold only " + ", ".join(PROJECTED_SOURCES),
        },
        {
            "expression": "variables.specs.all(s, "
            + " && ".join(f"!has(s.{f})" for f in forbidden_fields)
            + " && "
            + " && ".join(f"(!has(s.{f}) || s.{f} == false)" for f in host_namespaces)
            + ")",
            "message": f"{where}: spec."
            + ", spec.".join(forbidden_fields)
            + " and the host's network, PID and IPC namespaces are refused: pods are "
            "scheduled onto the team's pools, never onto a named node",
        },
        {
            "expression": "variables.specs.all(s, !has(s.tolerations) || "
            f"s.tolerations.all(x, {allowed_tolerations}))",
            "message": f"{where}: spec.tolerations may hold only what trainstack renders "
            f"({shown_tolerations}); the system pool and untargeted tolerations are refused",
        },
        {
            "expression": "variables.specs.all(s, !has(s.priorityClassName) || "
            f"s.priorityClassName in {_cel(classes)})",
            "message": f"{where}: spec.priorityClassName must be one of "
            + ", ".join(classes)
            + " (the team's maxPriority); system-node-critical and system-cluster-critical "
            "are the cluster's own",
        },
        {
            "expression": "variables.containers.all(cs, cs.all(c, !has(c.securityContext) || "
            "((!has(c.securityContext.privileged) || c.securityContext.privileged == false) && "
            "(!has(c.securityContext.capabilities) || "
            "!has(c.securityContext.capabilities.add) || "
            "size(c.securityContext.capabilities.add) == 0))))",
            "message": f"{where}: a container may not be privileged nor add capabilities "
            "(containers[].securityContext)",
        },
        {
            "expression": "variables.containers.all(cs, cs.all(c, !has(c.volumeDevices) && "
            "(!has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0))))",
            "message": f"{where}: containers[].ports[].hostPort and containers[].volumeDevices "
            "are refused",
        },
        _runtime_ref(where),
        {
            "expression": "!has(object.metadata.annotations) || "
            f"!({_cel(KUBEDL_NETWORK_MODE_ANNOTATION)} in object.metadata.annotations) || "
            f"object.metadata.annotations[{_cel(KUBEDL_NETWORK_MODE_ANNOTATION)}] != 'host'",
            "message": f"{where}: annotation {KUBEDL_NETWORK_MODE_ANNOTATION}: host would run "
            "the job's pods on the node's network",
        },
    ]
