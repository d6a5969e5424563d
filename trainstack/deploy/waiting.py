"""Why a deployed job waits, in the cluster's own words, read off the API's JSON (pure functions,
tested with recorded responses):

- the scheduler: a pod's ``PodScheduled`` condition False, with its reason (``Unschedulable``)
  and message ("0/3 nodes are available: 2 Insufficient nvidia.com/gpu ...");
- the kubelet: a container (the ``prepare`` init container or the main one) waiting for a reason
  other than being created (``ErrImagePull``, ``ImagePullBackOff``, ``CreateContainerConfigError``);
- the job controller: its last pod-creation event on the job is a failure — KubeDL's
  ``FailedCreatePod`` "Error creating: pods ... is forbidden: exceeded quota: ..." (KubeDL v0.5.0
  pkg/job_controller/pod_control.go:167), the Job controller's ``FailedCreate`` for a custom run
  (Kubernetes pkg/controller/job) — and no ``SuccessfulCreatePod``/``SuccessfulCreate`` since;
- the gang scheduler: the job's PodGroup — Volcano's, named after the job (KubeDL v0.5.0
  pkg/gang_schedule/volcano_scheduler/scheduler.go:170), with a condition True such as
  ``Unschedulable``; or the coscheduling plugin's (``kube-coscheduler``, what ACK Pro's scheduler
  runs: pkg/gang_schedule/coscheduler/scheduler.go labels each pod
  ``pod-group.scheduling.sigs.k8s.io/name``), whose status has a phase and counts, no conditions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trainstack.deploy.apijson import Reader

# Waiting reasons that only say the container is on its way.
_ON_ITS_WAY = frozenset({"ContainerCreating", "PodInitializing"})
_CREATE_FAILED = frozenset({"FailedCreatePod", "FailedCreate"})
_CREATED = frozenset({"SuccessfulCreatePod", "SuccessfulCreate"})
# KubeDL sets a gang scheduler's name on the pods it binds to a gang (KubeDL v0.5.0
# pkg/job_controller/pod.go:472-474); Volcano's PodGroup is the one read.
VOLCANO_SCHEDULER = "volcano"
VOLCANO_PODGROUP = ("scheduling.volcano.sh", "v1beta1", "podgroups")
# scheduler-plugins' PodGroup, which KubeDL's kube-coscheduler creates and names on every pod.
COSCHEDULING_PODGROUP = ("scheduling.sigs.k8s.io", "v1alpha1", "podgroups")
COSCHEDULING_LABEL = "pod-group.scheduling.sigs.k8s.io/name"
# Phases of a coscheduling PodGroup that mean its pods are placed (scheduler-plugins
# apis/scheduling/v1alpha1 PodGroupPhase); any other is a wait worth naming.
_PLACED = frozenset({"Scheduled", "Running", "Finished", "Failed"})


def _with(message: str | None) -> str:
    return f": {message}" if message else ""


def pod_reasons(pod: Mapping[str, Any], label: str, at: str, read: Reader) -> list[str]:
    """Why one pod is not running yet (nothing for a pod that is)."""
    status = read.obj(pod.get("status"), f"{at}.status")
    if status.get("phase") not in ("Pending", None):
        return []
    out: list[str] = []
    conditions = read.items(status.get("conditions"), f"{at}.status.conditions")
    for i, raw in enumerate(conditions):
        cond = read.obj(raw, f"{at}.status.conditions[{i}]")
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            reason = read.text(cond.get("reason"), f"{at}.status.conditions[{i}].reason")
            message = read.text(cond.get("message"), f"{at}.status.conditions[{i}].message")
            out.append(
                f"{label} unschedulable" + (f" ({reason})" if reason else "") + _with(message)
            )
    for key in ("initContainerStatuses", "containerStatuses"):
        for i, raw in enumerate(read.items(status.get(key), f"{at}.status.{key}")):
            where = f"{at}.status.{key}[{i}]"
            container = read.obj(raw, where)
            state = read.obj(container.get("state"), f"{where}.state")
            waiting = read.obj(state.get("waiting"), f"{where}.state.waiting")
            reason = read.text(waiting.get("reason"), f"{where}.state.waiting.reason")
            if reason and reason not in _ON_ITS_WAY:
                name = read.text(container.get("name"), f"{where}.name") or "?"
                message = read.text(waiting.get("message"), f"{where}.state.waiting.message")
                out.append(f"{label} container {name} {reason}{_with(message)}")
    return out


def event_reasons(events: Sequence[Any], read: Reader) -> list[str]:
    """The job controller's last pod-creation event, when it is a refusal."""
    creations: list[tuple[str, str, str | None]] = []
    for i, raw in enumerate(events):
        event = read.obj(raw, f"items[{i}]")
        reason = read.text(event.get("reason"), f"items[{i}].reason")
        if reason not in _CREATE_FAILED | _CREATED:
            continue
        when = (
            read.text(event.get("lastTimestamp"), f"items[{i}].lastTimestamp")
            or read.text(event.get("eventTime"), f"items[{i}].eventTime")
            or ""
        )
        message = read.text(event.get("message"), f"items[{i}].message")
        creations.append((when, str(reason), message))
    if not creations:
        return []
    _when, reason, message = max(creations, key=lambda c: c[0])  # RFC 3339: text order is time
    return [f"{reason}{_with(message)}"] if reason in _CREATE_FAILED else []


def podgroup_reasons(group: Mapping[str, Any] | None, name: str, read: Reader) -> list[str]:
    """The PodGroup's conditions that are True (Volcano: Unschedulable with its message); for a
    coscheduling PodGroup, which has none, its phase while its pods are not all placed."""
    if not group:
        return []
    status = read.obj(group.get("status"), "status")
    if str(group.get("apiVersion", "")).startswith(COSCHEDULING_PODGROUP[0] + "/"):
        phase = read.text(status.get("phase"), "status.phase") or "Pending"
        if phase in _PLACED:
            return []
        spec = read.obj(group.get("spec"), "spec")
        need = spec.get("minMember")
        placed = status.get("scheduled", 0)
        need = read.int32(need, "spec.minMember", minimum=0) if need is not None else 0
        placed = read.int32(placed, "status.scheduled", minimum=0)
        counts = f": {placed} of {need} pods placed" if need else ""
        return [f"PodGroup {name} {phase}{counts} (the gang starts only when all fit)"]
    out = []
    for i, raw in enumerate(read.items(status.get("conditions"), "status.conditions")):
        cond = read.obj(raw, f"status.conditions[{i}]")
        kind = read.text(cond.get("type"), f"status.conditions[{i}].type")
        if cond.get("status") != "True" or kind in (None, "Scheduled"):
            continue
        reason = read.text(cond.get("reason"), f"status.conditions[{i}].reason")
        message = read.text(cond.get("message"), f"status.conditions[{i}].message")
        out.append(f"PodGroup {name} {kind}" + (f" ({reason})" if reason else "") + _with(message))
    return out


def gang_group(
    pods: Sequence[Any], job: str, read: Reader
) -> tuple[tuple[str, str, str], str] | None:
    """The PodGroup the job's pods wait on — (group, version, plural) and its name — or None."""
    for i, raw in enumerate(pods):
        pod = read.obj(raw, f"items[{i}]")
        meta = read.obj(pod.get("metadata"), f"items[{i}].metadata")
        labels = read.obj(meta.get("labels"), f"items[{i}].metadata.labels")
        named = read.text(labels.get(COSCHEDULING_LABEL), f"items[{i}].metadata.labels")
        if named:
            return COSCHEDULING_PODGROUP, named
        spec = read.obj(pod.get("spec"), f"items[{i}].spec")
        if read.text(spec.get("schedulerName"), f"items[{i}].spec.schedulerName") == (
            VOLCANO_SCHEDULER
        ):
            return VOLCANO_PODGROUP, job
    return None
