"""What a failed node does to a TrainJob on trainstack's runtimes: the failure policy the
ClusterTrainingRuntimes trainstack ships carry, one rule for the platform that installs them and
the local runner that follows them (trainstack.local.trainerjob).

Why trainstack's runtimes set it, not the run: a TrainJob cannot carry a restart budget. Its
spec has no failure policy (Trainer v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go:
102-153) and a runtime patch reaches only pod templates (trainstack.trainer.trainjob), so the
JobSet's `failurePolicy` and its Jobs' `backoffLimit` come from the runtime alone (Trainer v2.3.0
pkg/runtime/framework/plugins/jobset/builder.go:112-141 copies the template's). A run's
`faultTolerance.maxRestarts` is therefore not carried on a Trainer environment: the runtime's
number decides, for every run.

What Trainer's own torch-distributed runtime would do: no failurePolicy (the first failed Job
fails the JobSet, JobSet v0.12.0 pkg/controllers/failure_policy.go:52-61) and pods left to the
webhook's OnFailure (pkg/webhooks/jobset_webhook.go:124-127), so a failed node's container
restarts alone in its pod, up to the Job's backoffLimit (Kubernetes' default 6). A restarted
node alone cannot rejoin its peers: torchrun's static rendezvous and `init_process_group` take
the world once, and the peers that lost a rank fail too. trainstack's runtimes therefore run
their pods `Never` with `backoffLimit: 0`, so a failed node fails its Job at once, and give the
JobSet `failurePolicy: {maxRestarts: RUNTIME_MAX_RESTARTS}` with no rules, so every failure is
the default rule's RestartJobSet: every Job is deleted and created again, the whole set
restarting together, until the restarts are spent and the JobSet fails (ReachedMaxRestarts).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainstack.kubedl.restart import NEVER
from trainstack.trainer.jobset import JOBSET
from trainstack.trainer.record import FailureAction

# The same number KubeDL's unconditional restarts are capped at (trainstack.kubedl.restart,
# after Huawei ModelArts' "3 consecutive" auto-restarts): a job that fails three times over is
# not going to succeed by itself.
RUNTIME_MAX_RESTARTS = 3
# The pod restart policy KubeDL's Never names too: no restart in place.
RUNTIME_POD_RESTART_POLICY = NEVER
RUNTIME_BACKOFF_LIMIT = 0


@dataclass(frozen=True)
class FailurePolicy:
    """What a node's failure does to the JobSet of a TrainJob on a trainstack runtime."""

    # How many times the whole set may be recreated before a failure fails it.
    max_restarts: int
    # Every Job recreated on a restart (True), or only the failed one (RestartJob).
    whole_set: bool
    # The pods' restartPolicy and the Jobs' backoffLimit: Never and 0, no restart in place.
    pod_restart_policy: str
    backoff_limit: int
    # Whether a failure of any exit code counts (no rule tells exit codes apart).
    any_exit: bool = True

    def describe(self) -> str:
        return (
            f"the runtime's failurePolicy.maxRestarts {self.max_restarts}: every failure "
            "restarts the whole JobSet"
        )


# A failure no rule matches takes the default action (JobSet v0.12.0
# pkg/controllers/failure_policy.go:45, 69-71), which recreates every Job.
RUNTIME_FAILURE_POLICY = FailurePolicy(
    max_restarts=RUNTIME_MAX_RESTARTS,
    whole_set=JOBSET.default_rule_action is FailureAction.RESTART_JOBSET
    and JOBSET.restart_recreates_all_jobs,
    pod_restart_policy=RUNTIME_POD_RESTART_POLICY,
    backoff_limit=RUNTIME_BACKOFF_LIMIT,
)
