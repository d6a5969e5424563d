"""Which restart policy each replica gets, from the run's fault tolerance and the kind's record:
one rule for the renderer (`restartPolicy` per replica) and the local runner (which replicas it
may recreate)."""

from __future__ import annotations

from trainstack.kubedl.record import DeletedPod, JobKind

EXIT_CODE = "ExitCode"
ON_FAILURE = "OnFailure"
NEVER = "Never"

# Huawei ModelArts (creating a training job, "auto restart") caps unconditional auto-restart at
# "3 consecutive" restarts. KubeDL v0.5.0 counts an OnFailure job's restarts in all, not in a
# row (pkg/job_controller/job.go:551-588, pastBackoffLimit: the restartCounts of the pods still
# Running summed against backoffLimit), so the cap is kept as 3 in all.
UNCONDITIONAL_RESTART_CAP = 3


def backoff_limit(max_restarts: int, *, unconditional: bool) -> int:
    """The `backoffLimit` rendered for a run's `faultTolerance`: `maxRestarts`, and with
    `unconditional` at most UNCONDITIONAL_RESTART_CAP. The local runner counts against the same
    number (trainstack.local.jobplan.restart_budget), so cluster and local agree."""
    if unconditional:
        return min(max_restarts, UNCONDITIONAL_RESTART_CAP)
    return max_restarts


def replica_restart_policy(
    kind: JobKind, role: str, *, fault_tolerance: bool, unconditional: bool
) -> str:
    """No fault tolerance: Never. `unconditional`: OnFailure (the kubelet restarts the container
    in place, the pod never fails). Otherwise ExitCode, except for a role without failover
    (`Role.failover`: the ElasticBatch AIMaster and the MPI launcher, whose failed pod fails
    the job under any policy): Never, which says what the cluster does and keeps the failed pod
    and its log instead of deleting it for a failover that never comes."""
    if not fault_tolerance:
        return NEVER
    if unconditional:
        return ON_FAILURE
    if kind.has_role(role) and not kind.role(role).failover:
        return NEVER
    return EXIT_CODE


def pod_restart_policy(replica_policy: str) -> str:
    """The pod template's own policy: KubeDL runs ExitCode pods as Never (the operator, not the
    kubelet, recreates them). KubeDL v0.5.0 pkg/job_controller/pod.go (setRestartPolicy)"""
    return NEVER if replica_policy == EXIT_CODE else replica_policy


# The first Kubernetes (1.x) whose kubelet gives a deleted pod a terminal phase before it is
# removed (Kubernetes docs, "Pod Lifecycle", Pod phase; kubernetes/kubernetes#115331). KubeDL
# v0.5.0 reads pods from its cache, so from then on it sees a deleted pod Failed (or
# Succeeded) before the pod is gone, and judges it: it is no longer only a missing pod.
DELETED_POD_TERMINAL_PHASE_MINOR = 27


def deleted_pod_rule(kind: JobKind, replica_policy: str, *, kubernetes_minor: int) -> DeletedPod:
    """How a pod deleted through the API is judged, for a replica rendered with
    `replica_policy` on Kubernetes 1.`kubernetes_minor` (the local runner passes the platform's
    minimum, trainstack.platformnames.MIN_KUBERNETES_MINOR). A custom run's batch/v1 Job waits
    for the terminal phase only when trainstack renders it a podFailurePolicy, which it does for
    ExitCode (trainstack.render.context); that policy has no DisruptionTarget rule, so a
    preemption or drain is judged by its exit code like a `kubectl delete`."""
    if not kind.by_kubedl:
        return DeletedPod.EXIT if replica_policy == EXIT_CODE else DeletedPod.FAILED
    if kubernetes_minor >= DELETED_POD_TERMINAL_PHASE_MINOR:
        return DeletedPod.EXIT_THEN_RECREATED
    return DeletedPod.RECREATED
