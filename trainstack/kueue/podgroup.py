"""How Kueue v0.19.2 admits a KubeDL job: as a plain-pod group, and what it does with the pods of
one, modelled from its pod integration (paths under github.com/kubernetes-sigs/kueue at v0.19.2,
mostly pkg/controller/jobs/pod/pod_controller.go).

KubeDL's kinds have no Kueue integration: KubeDL makes the pods itself, so trainstack labels
every replica's pod template as one group (`group_metadata`) and Kueue's pod webhook gates each
pod (scheduling gate `kueue.x-k8s.io/admission`) until the group's Workload is admitted, then
ungates them all. What Kueue's source says, and trainstack relies on:

- The Workload is built only once the group has as many runnable pods as its total count
  (validatePodGroupMetadata, pod_controller.go:836-853), so every pod of the group must exist
  while all of them are gated. KubeDL's DAG scheduling creates a role's pods only after another
  role's are Running (KubeDL v0.5.0 apis/training/v1alpha1/*_defaults.go): the platform starts
  KubeDL with `--feature-gates=DAGScheduling=false` (pkg/features/features.go:29, 55, main.go:69)
  on a Kueue environment. (ElasticBatch's workers also wait for the job's `aimaster: ready`
  annotation, which trainstack renders up front: trainstack.render.context.)
- A pod's PodSet is the hash of its admission-relevant shape (requests, ports, node selector,
  affinity, tolerations, priority, ...; never env, names or hostnames:
  pkg/util/pod/pod.go:133-178), so every pod KubeDL makes from one replica template is one role.
- KubeDL recreates a failed pod of an `ExitCode` role from the same template (trainstack.kubedl.
  restart): the new pod has the group's labels and the role's shape, so it belongs to the group
  and its role's PodSet. The group is not finished while a pod of it runs and no pod says
  `retriable-in-group: false` (Finished, pod_controller.go:372-414); FindMatchingWorkloads
  (1248-1367) would count a new pod as the role's, keep the Workload (equivalentToWorkload,
  1373-1405) and finalize the failed one it replaces; Run (279-343) ungates it at once. But
  KubeDL reuses the failed pod's name, which Kueue's finalizer keeps taken until a replacement
  exists: without the platform's finalizer releaser (trainstack.kueue.releaser), which frees
  the name, the replacement never comes (`replace` replays both; docs/queues.md, "A replica
  that fails").
- Kueue never recreates pods itself; when it preempts a group it deletes every pod of it and
  leaves the recreating to their maker (site/content/en/docs/tasks/run/plain_pods.md:121-133).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import replace as _replace
from typing import Any

from trainstack.kueue.api import (
    POD_GROUP_NAME_LABEL,
    POD_GROUP_TOTAL_COUNT_ANNOTATION,
    QUEUE_LABEL,
    RETRIABLE_IN_GROUP_ANNOTATION,
    ROLE_HASH_ANNOTATION,
)

# The KubeDL feature gate that orders role starts, off on a Kueue environment (see above).
KUBEDL_DAG_GATE_OFF = "--feature-gates=DAGScheduling=false"


def group_metadata(group: str, total: int, queue: str) -> tuple[dict[str, str], dict[str, str]]:
    """The labels and annotations every replica's pod template of a KubeDL job carries: its
    queue, its group (the job's name: unique per kind and namespace, a valid Workload name) and
    how many pods the group has."""
    return (
        {QUEUE_LABEL: queue, POD_GROUP_NAME_LABEL: group},
        {POD_GROUP_TOTAL_COUNT_ANNOTATION: str(total)},
    )


def role_shape(pod_spec: Mapping[str, Any]) -> str:
    """A stand-in for Kueue's role hash: the same fields (pkg/util/pod/pod.go:147-178), so two
    pods share it exactly when Kueue puts them in one PodSet. (Kueue hashes Go's JSON of them;
    trainstack only ever compares two of its own.)"""

    def containers(key: str) -> list[dict[str, Any]]:
        return [
            {
                "requests": ((c.get("resources") or {}).get("requests")) or None,
                "ports": c.get("ports") or None,
            }
            for c in pod_spec.get(key) or ()
        ]

    shape = {
        "initContainers": containers("initContainers"),
        "containers": containers("containers"),
        **{
            key: pod_spec.get(key)
            for key in (
                "nodeSelector",
                "affinity",
                "tolerations",
                "runtimeClassName",
                "priority",
                "topologySpreadConstraints",
                "overhead",
                "resourceClaims",
            )
        },
    }
    if pod_spec.get("resources") is not None:
        shape["resources"] = (pod_spec.get("resources") or {}).get("requests")
    text = json.dumps({"spec": shape}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


@dataclass(frozen=True)
class GroupPod:
    """One pod of a group, as Kueue's pod reconciler sees it."""

    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    role: str  # its role hash (the webhook's annotation, else role_shape of its spec)
    phase: str = "Pending"  # Pending, Running, Succeeded, Failed
    gated: bool = True
    deleting: bool = False
    on_node: bool = False

    @staticmethod
    def of(
        name: str, labels: Mapping[str, str], annotations: Mapping[str, str], spec: Any
    ) -> GroupPod:
        """A pod as the webhook admits it: gated, its role hash written (pod_webhook.go:171-189)."""
        role = annotations.get(ROLE_HASH_ANNOTATION) or role_shape(spec)
        return GroupPod(name, dict(labels), {**annotations, ROLE_HASH_ANNOTATION: role}, role)

    @property
    def group(self) -> str | None:
        return self.labels.get(POD_GROUP_NAME_LABEL)

    @property
    def queue(self) -> str | None:
        return self.labels.get(QUEUE_LABEL)

    @property
    def total(self) -> int | None:
        raw = self.annotations.get(POD_GROUP_TOTAL_COUNT_ANNOTATION)
        return int(raw) if raw is not None and raw.isdigit() else None

    @property
    def runnable_or_succeeded(self) -> bool:
        """isPodRunnableOrSucceeded (pod_controller.go:899-904): not Failed, and not deleted
        before it reached a node."""
        if self.deleting and not self.on_node:
            return False
        return self.phase != "Failed"


@dataclass(frozen=True)
class Workload:
    """A group's Workload: its name and per role (PodSet) the count admitted."""

    name: str
    podsets: Mapping[str, int]
    admitted: bool = False
    finished: bool = False


def compose(pods: Sequence[GroupPod]) -> Workload | str:
    """The Workload Kueue builds for a group, or why it builds none yet
    (validatePodGroupMetadata and constructGroupPodSets, pod_controller.go:795-886)."""
    if not pods:
        return "no pods"
    first = pods[0]
    total = first.total
    if first.group is None or total is None or total < 1:
        return f"{POD_GROUP_NAME_LABEL} and {POD_GROUP_TOTAL_COUNT_ANNOTATION} are both required"
    active = [p for p in pods if p.runnable_or_succeeded]
    if len(active) < total:
        return f"'{first.group}' group has fewer runnable pods than expected"
    for p in pods:
        if p.phase == "Failed":
            continue
        if p.queue != first.queue:
            return f"pods '{first.name}' and '{p.name}' has different queue names"
        if p.total != total:
            return f"pods '{first.name}' and '{p.name}' has different total counts"
    podsets: dict[str, int] = {}
    for p in active:
        podsets[p.role] = podsets.get(p.role, 0) + 1
    return Workload(first.group, dict(sorted(podsets.items())))


@dataclass(frozen=True)
class Match:
    """What FindMatchingWorkloads makes of a group's pods against its Workload."""

    kept: tuple[str, ...]
    replaced: tuple[str, ...]  # inactive pods a newer one of their role stands for: finalized
    excess: tuple[str, ...]  # active pods beyond their role's count: deleted
    equivalent: bool  # False: Kueue deletes the Workload and builds another
    absent: int  # pods the Workload still waits for (WaitingForReplacementPods while > 0)


def match(workload: Workload, pods: Sequence[GroupPod]) -> Match:
    """FindMatchingWorkloads (pod_controller.go:1289-1340) and equivalentToWorkload (1373-1405),
    without fast admission (trainstack never sets it)."""
    active = [p for p in pods if p.runnable_or_succeeded]
    inactive = [p for p in pods if not p.runnable_or_succeeded]
    kept: list[GroupPod] = []
    replaced: list[str] = []
    excess: list[str] = []
    absent = 0
    for role, count in workload.podsets.items():
        role_active = [p for p in active if p.role == role]
        role_inactive = [p for p in inactive if p.role == role]
        absent += max(0, count - len(role_active))
        # sortActivePods keeps ungated pods first (pod_controller.go:954-977)
        role_active.sort(key=lambda p: p.gated)
        kept += role_active[:count]
        excess += [p.name for p in role_active[count:]]
        finalizable = min(len(role_inactive), len(role_inactive) + len(role_active) - count)
        if finalizable > 0:
            replaced += [p.name for p in role_inactive[len(role_inactive) - finalizable :]]
            kept += role_inactive[: len(role_inactive) - finalizable]
        else:
            kept += role_inactive
    current: dict[str, int] = {}
    for p in kept:
        if p.runnable_or_succeeded:
            current[p.role] = current.get(p.role, 0) + 1
    equivalent = bool(kept) and all(
        role in workload.podsets and (workload.finished or workload.podsets[role] >= n)
        for role, n in current.items()
    )
    return Match(tuple(p.name for p in kept), tuple(replaced), tuple(excess), equivalent, absent)


def finished(workload: Workload, pods: Sequence[GroupPod]) -> bool:
    """Finished (pod_controller.go:372-414): every pod of the group succeeded, or none is left
    running in a group one of whose pods says `retriable-in-group: false`."""
    total = pods[0].total if pods else None
    succeeded = sum(p.phase == "Succeeded" for p in pods)
    running = any(p.phase not in ("Succeeded", "Failed") for p in pods)
    unretriable = any(p.annotations.get(RETRIABLE_IN_GROUP_ANNOTATION) == "false" for p in pods)
    return succeeded == total or (not running and unretriable)


def ungated(workload: Workload, pods: Sequence[GroupPod]) -> tuple[GroupPod, ...]:
    """Run (pod_controller.go:279-343): once the Workload is admitted, every gated pod whose role
    is one of its PodSets loses the gate (one whose role is not fails the whole Run)."""
    if not workload.admitted:
        return tuple(pods)
    out = []
    for p in pods:
        if p.gated and p.role not in workload.podsets:
            raise ValueError(f"podSetInfo with the name '{p.role}' is not found")
        out.append(_replace(p, gated=False) if p.gated else p)
    return tuple(out)


@dataclass(frozen=True)
class Replacement:
    """A failed replica's fate in its group, once its maker deleted it and wants it back."""

    match: Match
    finished: bool
    pods: tuple[GroupPod, ...]  # the group afterwards
    # Why the new pod cannot exist (yet): its maker reuses the failed pod's name, which Kueue's
    # finalizer keeps taken. None: it joined.
    blocked: str | None = None
    # While the freed name waited for its new pod: how many pods the Workload waited for
    # (WaitingForReplacementPods while > 0); None when the name was never freed.
    absent_meanwhile: int | None = None


def replace(
    workload: Workload,
    pods: Sequence[GroupPod],
    failed: str,
    new: GroupPod,
    release: Callable[[str], bool] | None = None,
) -> Replacement:
    """One pod of an admitted, running group failed; its maker deleted it and creates `new` in
    its place: what Kueue's next reconcile makes of it. `release(name)`: whether the finalizer
    releaser (trainstack.kueue.releaser) frees the deleted pod `name`; None: no releaser runs.

    The deleted pod stays while it holds Kueue's finalizer (`kueue.x-k8s.io/managed`,
    pod_webhook.go:171-174), and Kueue removes that finalizer from a failed pod only once a newer
    pod of its role stands for it (FindMatchingWorkloads, pod_controller.go:1323-1327, 1357) or
    the whole group is done (Finalize, 590-608). A maker that names its pods afresh (a Job's
    generated names) gets the new pod in, counted as the role's, the old one finalized. KubeDL
    recreates a replica under the same name `<job>-<role>-<i>`, and while the deleted pod still
    fills that index it creates nothing (KubeDL v0.5.0 pkg/job_controller/pod.go:264-312; a
    create would be AlreadyExists): without the releaser the group waits for its replacement
    for good (WaitingForReplacementPods, pod_controller.go:1459-1516). With it, the deleted pod
    goes, the Workload waits for one pod of the role (countAbsentPods, 1363-1371), and the pod
    KubeDL then creates under the freed name joins in its place."""
    group = [_replace(p, phase="Failed", deleting=True) if p.name == failed else p for p in pods]
    absent_meanwhile = None
    if new.name == failed:
        if release is None or not release(failed):
            m = match(workload, group)
            return Replacement(
                m,
                finished(workload, group),
                tuple(group),
                blocked=(
                    f"pod {failed} is deleted but kept by Kueue's finalizer until a "
                    f"replacement joins, and its replacement must take the same name: "
                    f"{m.absent} pod(s) absent"
                ),
            )
        group = [p for p in group if p.name != failed]
        absent_meanwhile = match(workload, group).absent
    group.append(new)
    m = match(workload, group)
    done = finished(workload, group)
    after = ungated(workload, [p for p in group if p.name in m.kept])
    return Replacement(m, done, after, absent_meanwhile=absent_meanwhile)
