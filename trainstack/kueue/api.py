"""Kueue's API as trainstack uses it: its objects, the labels and annotations a job carries into a
queue, the integrations the platform enables, and the words a Workload's status uses.

Paths are in github.com/kubernetes-sigs/kueue at tag v0.19.2 (`Kueue v0.19.2 <path>:<line>`), the
newest patch of the newest minor release (2026-08-20): v1beta2 is the storage version of every
Kueue CRD there (config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml:1575-1576).
"""

from __future__ import annotations

VERSION = "v0.19.2"

# apis/kueue/v1beta2/groupversion_info.go:30
GROUP = "kueue.x-k8s.io"
API_VERSION = f"{GROUP}/v1beta2"
RESOURCE_FLAVOR = "ResourceFlavor"
CLUSTER_QUEUE = "ClusterQueue"
LOCAL_QUEUE = "LocalQueue"
WORKLOAD = "Workload"
WORKLOADS = "workloads"  # the plural, for the API's paths

# The pending-workloads visibility API, an aggregated API the controller serves
# (apis/visibility/v1beta2/groupversion_info.go:33; pkg/visibility/storage/storage.go:28, 30):
# GET /apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/<cq>/pendingworkloads and
# .../namespaces/<ns>/localqueues/<lq>/pendingworkloads.
VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
VISIBILITY_VERSION = "v1beta2"
PENDING_WORKLOADS = "pendingworkloads"
# Each item (apis/visibility/v1beta2/types.go:66-80): metadata (the Workload's name and
# namespace), priority, localQueueName, positionInClusterQueue, positionInLocalQueue, counted
# from 0.
POSITION_IN_CLUSTER_QUEUE = "positionInClusterQueue"
POSITION_IN_LOCAL_QUEUE = "positionInLocalQueue"

# The label that puts a job (or a plain pod) into a LocalQueue of its namespace
# (pkg/controller/constants/constants.go:23). A job without it is left alone: the Configuration's
# manageJobsWithoutQueueName defaults to false (apis/config/v1beta2/configuration_types.go:46-53).
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"

# A plain-pod group (pkg/controller/jobs/pod/constants/constants.go:27-29, 35-36): the group's
# name as a label on every pod of it, the number of pods the group has as an annotation; both
# or neither (pkg/controller/jobs/pod/pod_webhook.go:277-305). The Workload is named after the
# group (site/content/en/docs/tasks/run/plain_pods.md:164-165).
POD_GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_TOTAL_COUNT_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
# On any one pod of a group with value "false": the group is finished once no pod of it runs
# (pod_controller.go:238-256, 406-408). trainstack never sets it (kueue/podgroup.py says why).
RETRIABLE_IN_GROUP_ANNOTATION = "kueue.x-k8s.io/retriable-in-group"
# What the pod webhook writes on every pod it manages (constants.go:34; pod_webhook.go:89-101,
# 187): the hash of the pod's admission-relevant shape, which names the pod's PodSet.
ROLE_HASH_ANNOTATION = "kueue.x-k8s.io/role-hash"
# The finalizer the webhook puts on every pod it manages, and Kueue's pod controller removes
# (pkg/constants/constants.go:52; pkg/controller/jobs/pod/constants/constants.go:22;
# pod_webhook.go:170-172; pod_controller.go:979-995).
POD_FINALIZER = "kueue.x-k8s.io/managed"
# The scheduling gate the webhook puts on every managed pod until its Workload is admitted
# (constants.go:24; pod_webhook.go:171-176).
ADMISSION_GATE = "kueue.x-k8s.io/admission"

# The Configuration's integrations.frameworks names (Kueue v0.19.2
# pkg/controller/jobs/job/job_controller.go:55, jobset/jobset_controller.go:44,
# pod/pod_controller.go:68, trainjob/trainjob_controller.go:54). KubeDL's kinds have no
# integration of their own: their pods go through "pod" as groups.
FRAMEWORK_BATCH_JOB = "batch/job"
FRAMEWORK_JOBSET = "jobset.x-k8s.io/jobset"
FRAMEWORK_POD = "pod"
FRAMEWORK_TRAINJOB = "trainer.kubeflow.org/trainjob"

# Workload condition types (apis/kueue/v1beta2/workload_types.go:931, 939, 990, 1012, 1023).
ADMITTED = "Admitted"
QUOTA_RESERVED = "QuotaReserved"
FINISHED = "Finished"
# Evicted (line 1005) is spelled as a pod's eviction reason is: trainstack.recovery.EVICTED.
PREEMPTED = "Preempted"
WAITING_FOR_REPLACEMENT_PODS = "WaitingForReplacementPods"

# Why QuotaReserved is False (workload_types.go:945-977). The scheduler writes these only with
# the feature gate UnadmittedWorkloadsObservability (beta, off by default in v0.19:
# pkg/features/kube_features.go:899-901; pkg/workload/workload.go:1626-1631), else "Pending" with
# the same message (pkg/scheduler/scheduler.go:1172); the platform turns the gate on.
PENDING = "Pending"
WAITING_FOR_QUOTA = "WaitingForQuota"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
NO_MATCHING_FLAVOR = "NoMatchingFlavor"
WAITING_FOR_PREEMPTED = "WaitingForPreemptedWorkloads"
MISCONFIGURED = "Misconfigured"
SUSPENDED = "Suspended"
UNADMITTED_GATE = "UnadmittedWorkloadsObservability"

QUOTA_REASONS = {
    PENDING: "waiting to be admitted",
    WAITING_FOR_QUOTA: "waiting for quota: the team's share and what the cohort lends are in use",
    EXCEEDS_MAX_QUOTA: "larger than the team's quota plus what it may borrow: it never fits",
    NO_MATCHING_FLAVOR: "no resource flavor (node pool) matches its pods",
    WAITING_FOR_PREEMPTED: "waiting for the workloads it preempted to give back their quota",
    MISCONFIGURED: "its queue is missing or misconfigured",
    SUSPENDED: "its queue is stopped",
}

# Preempted's reasons (workload_types.go:1035-1049) and how Kueue words them in the message
# (pkg/scheduler/preemption/preemption.go:162-186: "Preempted to accommodate a workload (UID: ...,
# JobUID: ...) due to <reason words>; preemptor path: ...; preemptee path: ...").
PREEMPTION_REASONS = {
    "InClusterQueue": "a higher-priority job of the same team",
    "InCohortReclamation": "another team reclaiming its lent quota",
    "InCohortFairSharing": "fair sharing within the cohort",
    "InCohortReclaimWhileBorrowing": "another team reclaiming quota while borrowing",
}
