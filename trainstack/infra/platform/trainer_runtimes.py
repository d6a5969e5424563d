"""The ClusterTrainingRuntimes a Trainer environment's platform installs, built from the one model
(trainstack.trainer.runtimes) and the one failure policy (trainstack.trainer.restart): the
objects here only arrange what those records say into Trainer v2.3.0's API.

Which: the records Trainer's own manifests name a runtime for (`Runtime.shipped`: torch-distributed
and xgboost-distributed), installed under those names with trainstack's failure policy in place of
Trainer's, and once more per trainstack PriorityClass with its pods of that class
(`Runtime.name_at`: a TrainJob cannot set a priority class itself). The MPI record's runtime is
not installed: its `node` job (sshd and the ranks) is not the trainer job, so a TrainJob could
not set that job's image or resources (Trainer v2.3.0
pkg/runtime/framework/plugins/jobset/builder.go:112-141); each MPI run renders a TrainingRuntime
of its own instead (`Runtime.per_run`; trainstack.render.mpiruntime).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainstack.infra.platform.trainer_release import RUNTIME_IMAGES
from trainstack.platformnames import priority_class_name
from trainstack.trainer import runtimes
from trainstack.trainer.record import Runtime
from trainstack.trainer.restart import RUNTIME_FAILURE_POLICY
from trainstack.trainer.runtimes import ANCESTOR_LABEL, ANCESTOR_TRAINER

# Trainer v2.3.0 manifests/base/runtimes/torch_distributed.yaml:19-20: what the SDK lists
# runtimes by.
FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"


@dataclass(frozen=True)
class Installed:
    """One ClusterTrainingRuntime the platform installs: a record, at one priority or none."""

    runtime: Runtime
    priority: int | None

    @property
    def name(self) -> str:
        return self.runtime.name_at(self.priority)


def installed() -> list[Installed]:
    """The runtimes the platform installs (trainstack.trainer.runtimes.installed)."""
    return [Installed(r, p) for r, p in runtimes.installed()]


def runtime_spec(runtime: Runtime, priority: int | None = None) -> dict[str, Any]:
    """One ClusterTrainingRuntime's spec (Trainer v2.3.0 pkg/apis/trainer/v1alpha1/
    trainingruntime_types.go:60-206; JobSet v0.12.0 api/jobset/v1alpha2/jobset_types.go)."""
    policy = RUNTIME_FAILURE_POLICY
    if not policy.whole_set:  # RestartJob would need a rule; the runtime carries none
        raise ValueError("trainstack's runtimes restart the whole JobSet or nothing")
    jobs: list[dict[str, Any]] = []
    for job in runtime.replicated_jobs:
        template: dict[str, Any] = {
            "spec": {
                "backoffLimit": policy.backoff_limit,
                "template": {
                    "spec": {
                        "restartPolicy": policy.pod_restart_policy,
                        **(
                            {}
                            if priority is None
                            else {"priorityClassName": priority_class_name(priority)}
                        ),
                        "containers": [
                            {
                                "name": runtime.container,
                                "image": RUNTIME_IMAGES[runtime.runtime_name],
                            }
                        ],
                    }
                },
            }
        }
        if job.trainer_ancestor:
            template["metadata"] = {"labels": {ANCESTOR_LABEL: ANCESTOR_TRAINER}}
        entry: dict[str, Any] = {"name": job.name, "template": template}
        if job.depends_on:
            entry["dependsOn"] = [{"name": n, "status": str(s)} for n, s in job.depends_on]
        jobs.append(entry)
    success: dict[str, Any] = {"operator": str(runtime.success_operator)}
    if runtime.success_targets:
        success["targetReplicatedJobs"] = list(runtime.success_targets)
    return {
        "mlPolicy": {"numNodes": 1, str(runtime.ml_policy): {}},
        "template": {
            "spec": {
                # No rules: every failure takes the default RestartJobSet (restart.py).
                "failurePolicy": {"maxRestarts": policy.max_restarts},
                "successPolicy": success,
                "replicatedJobs": jobs,
            }
        },
    }
