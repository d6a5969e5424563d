"""What JobSet (sigs.k8s.io/jobset v0.12.0, the version Kubeflow Trainer v2.3.0's go.mod pins) and
the TrainJob controller do with the JobSet a TrainJob becomes: how its pods are named and
reached, when it fails, restarts, succeeds, times out and is deleted.

Each fact names its source: `JobSet v0.12.0 <path>:<line>` in github.com/kubernetes-sigs/jobset
at tag v0.12.0, `Trainer v2.3.0 <path>:<line>` in github.com/kubeflow/trainer at tag v2.3.0.
"""

from __future__ import annotations

from trainstack.trainer.record import FailureAction, JobSetRules, SuccessOperator

# JobSet v0.12.0 pkg/constants/constants.go:34 (RestartsKey): on every Job and pod.
RESTART_ATTEMPT_LABEL = "jobset.sigs.k8s.io/restart-attempt"
# JobSet v0.12.0 api/jobset/v1alpha2/jobset_types.go:24 (JobSetNameKey): on every Job and pod.
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
# JobSet v0.12.0 api/jobset/v1alpha2/jobset_types.go:32 (ReplicatedJobNameKey)
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
# JobSet v0.12.0 api/jobset/v1alpha2/jobset_types.go:36 (JobIndexKey)
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"

# The condition a whole-set restart sets (True while the Jobs are recreated; its message names the
# first failed Job) and the count it bumps. JobSet v0.12.0 api/jobset/v1alpha2/jobset_types.go:112,
# 211-218; pkg/controllers/failure_policy.go:185-207
RESTARTING_CONDITION = "RestartingJobSet"
JOBSET_PLURAL = "jobsets"

JOBSET = JobSetRules(
    # JobSet v0.12.0 api/jobset/v1alpha2/groupversion_info.go:27
    api_version="jobset.x-k8s.io/v1alpha2",
    # The webhook defaults an empty pod restartPolicy to OnFailure, so a failed container is
    # restarted in its pod by the kubelet, each restart counted against the child Job's
    # backoffLimit (Kubernetes' default 6), before the Job fails and the JobSet sees it.
    # JobSet v0.12.0 pkg/webhooks/jobset_webhook.go:124-127
    default_pod_restart_policy="OnFailure",
    # "If no failure policy is defined, mark the JobSet as failed" (reason FailedJobs).
    # JobSet v0.12.0 pkg/controllers/failure_policy.go:52-61, pkg/constants/constants.go:57
    fails_without_failure_policy=True,
    # A failure no rule matches restarts the whole JobSet.
    # JobSet v0.12.0 pkg/controllers/failure_policy.go:45, 69-71
    default_rule_action=FailureAction.RESTART_JOBSET,
    # maxRestarts is a plain int32 with no default: 0, so RestartJobSet fails the JobSet at once
    # (reason ReachedMaxRestarts) unless the runtime raises it.
    # JobSet v0.12.0 api/jobset/v1alpha2/jobset_types.go:482,
    # pkg/controllers/failure_policy.go:226-232
    default_max_restarts=0,
    # RestartJobSet bumps status.restarts; every Job whose restart-attempt label is lower is then
    # "previous" and deleted, and the Jobs are created again with the new attempt.
    # JobSet v0.12.0 pkg/controllers/failure_policy.go:185-207,
    # pkg/controllers/jobset_controller.go:365-376, 179-183
    restart_recreates_all_jobs=True,
    restart_label=RESTART_ATTEMPT_LABEL,
    # JobSet v0.12.0 pkg/controllers/jobset_controller.go:162-167 (jobSetFinished: deleteJobs)
    deletes_active_jobs_when_finished=True,
    # Unset: "the JobSet won't be automatically deleted" (api/jobset/v1alpha2/jobset_types.go:
    # 178-187); the expiry counts from the Completed or Failed condition's transition
    # (pkg/controllers/ttl_after_finished.go:84-105). Trainer's builder sets no TTL (Trainer
    # v2.3.0 pkg/runtime/framework/plugins/jobset/jobset.go:412-433) and the TrainJob has no
    # TTL field (pkg/apis/trainer/v1alpha1/trainjob_types.go:102-153); a TrainJob whose JobSet
    # a TTL deleted keeps its final status (jobset.go:439-446).
    default_ttl_seconds=None,
    # The clock starts at the TrainJob's creationTimestamp, or when it was last resumed; past it
    # the TrainJob is Failed (reason DeadlineExceeded) and its JobSet deleted.
    # Trainer v2.3.0 pkg/controller/trainjob_controller.go:155-182,
    # pkg/apis/trainer/v1alpha1/trainjob_types.go:80-83, 131-139
    deadline_from_creation=True,
    deadline_reason="DeadlineExceeded",
    # "Default success policy to operator All targeting all replicatedJobs."
    # JobSet v0.12.0 pkg/webhooks/jobset_webhook.go:112-115, pkg/controllers/success_policy.go:51-63
    default_success_operator=SuccessOperator.ALL,
)


def pod_hostname(job: str, replicated_job: str, job_index: int, pod_index: int) -> str:
    """A pod's hostname: `<jobset>-<replicated job>-<job index>-<pod index>`; the JobSet is
    named after the TrainJob, and Trainer's runtimes run one Job per replicated job.
    JobSet v0.12.0 api/jobset/v1alpha2/jobset_types.go:378-383;
    Trainer v2.3.0 pkg/runtime/framework/plugins/jobset/builder.go:120-123"""
    return f"{job}-{replicated_job}-{job_index}-{pod_index}"


def pod_address(job: str, replicated_job: str, pod_index: int) -> str:
    """How other pods reach one: its hostname under the JobSet's headless Service, whose
    subdomain defaults to the JobSet's (the TrainJob's) name; DNS hostnames are on by default.
    Trainer v2.3.0 pkg/runtime/framework/plugins/jobset/jobset.go:281-291;
    JobSet v0.12.0 pkg/webhooks/jobset_webhook.go:130-139"""
    return f"{pod_hostname(job, replicated_job, 0, pod_index)}.{job}"
