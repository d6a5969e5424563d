"""The shape of a Trainer runtime record (`Runtime`, its `ReplicatedJob`s, the JobSet rules it
runs under): the types trainstack.trainer.runtimes and trainstack.trainer.jobset fill in.

A variable the runtime plugin injects is a `trainstack.kubedl.Injected`, the same shape the
KubeDL records use, so `trainstack env` and the contract read both backends alike."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from trainstack.kubedl.jobtype import JobType
from trainstack.kubedl.record import Injected


class MLPolicy(enum.StrEnum):
    """The runtime's `spec.mlPolicy` member, which picks the plugin that enforces it (only one may
    be set). Kubeflow Trainer v2.3.0 pkg/apis/trainer/v1alpha1/trainingruntime_types.go:172-206"""

    TORCH = "torch"
    MPI = "mpi"
    XGBOOST = "xgboost"


class SuccessOperator(enum.StrEnum):
    """JobSet's successPolicy operator: All or Any of the targeted Jobs must complete.
    JobSet v0.12.0 api/jobset/v1alpha2/jobset_types.go:397-406, 523-533"""

    ALL = "All"
    ANY = "Any"


class FailureAction(enum.StrEnum):
    """What the JobSet controller does when a child Job fails.
    JobSet v0.12.0 api/jobset/v1alpha2/jobset_types.go:408-435"""

    FAIL_JOBSET = "FailJobSet"
    # Every Job of the JobSet is deleted and created again (the whole set restarts), counted
    # against failurePolicy.maxRestarts.
    RESTART_JOBSET = "RestartJobSet"
    RESTART_JOBSET_IGNORE_MAX = "RestartJobSetAndIgnoreMaxRestarts"
    RESTART_JOB = "RestartJob"
    RESTART_JOB_IGNORE_MAX = "RestartJobAndIgnoreMaxRestarts"


class DependsOnStatus(enum.StrEnum):
    """When a replicated job that `dependsOn` another may start.
    JobSet v0.12.0 api/jobset/v1alpha2/jobset_types.go:366-375"""

    READY = "Ready"  # every pod of the other's Jobs is ready
    COMPLETE = "Complete"  # every Job of the other has succeeded


@dataclass(frozen=True)
class ReplicatedJob:
    """One replicated job of a runtime's JobSet template: a batch/v1 Indexed Job per replica,
    one pod per completion index."""

    name: str
    # trainstack's roles whose replicas become this job's pods, in completion-index order.
    roles: tuple[str, ...]
    # Labelled `trainer.kubeflow.org/trainjob-ancestor-step: trainer`: the TrainJob's image,
    # command, args and env land on its `node` container, and numNodes sizes it.
    trainer_ancestor: bool
    # Its pods run the component's command; False: they only host what another job starts in
    # them (MPI's nodes run sshd for the launcher's mpirun).
    runs_command: bool = True
    depends_on: tuple[tuple[str, DependsOnStatus], ...] = ()


@dataclass(frozen=True)
class Runtime:
    """How Kubeflow Trainer runs one trainstack job type: the ClusterTrainingRuntime a TrainJob
    names, its replicated jobs, what the plugin injects and when the JobSet succeeds."""

    job_type: JobType
    # the ClusterTrainingRuntime `spec.runtimeRef.name` names; for a `per_run` record, what the
    # messages call its shape (the run's own runtime is named after its TrainJob)
    runtime_name: str
    # Whether Trainer v2.3.0's manifests ship a runtime of this name; False: the platform
    # installs trainstack's own of this shape.
    shipped: bool
    ml_policy: MLPolicy
    replicated_jobs: tuple[ReplicatedJob, ...]
    container: str  # the container the plugin and the TrainJob's trainer fields act on
    port: int | None  # the port the plugin adds to that container
    injected: tuple[Injected, ...]
    # Names a TrainJob's spec.trainer.env may not set (the admission webhook refuses them).
    reserved: frozenset[str]
    success_operator: SuccessOperator
    # The replicated jobs the success policy counts; () means every one.
    success_targets: tuple[str, ...] = ()
    # True: the launcher's pod is also a node (in the hostfile, counted in numNodes).
    launcher_is_node: bool = False
    # True: the platform installs no runtime of this shape; each run renders its own namespaced
    # TrainingRuntime, named after its TrainJob, holding the run's pod templates whole
    # (trainstack.trainer.mpi says why).
    per_run: bool = False
    # (a variable KubeDL's kind of this type sets, the injected one holding the same value): a
    # rendered TrainJob's command exports each, so a script written for KubeDL runs unchanged.
    kubedl_env: tuple[tuple[str, str], ...] = ()

    def name_at(self, priority: int | None) -> str:
        """The runtime a TrainJob of this priority names. A TrainJob cannot set its pods'
        priority class (Trainer v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go:389-463: no
        priorityClassName in a PodSpecPatch), so the platform installs one runtime per
        trainstack PriorityClass whose pod templates carry it, and a run of that priority names
        it."""
        return self.runtime_name if priority is None else f"{self.runtime_name}-priority-{priority}"

    def job(self, name: str) -> ReplicatedJob:
        for job in self.replicated_jobs:
            if job.name == name:
                return job
        raise KeyError(f"the {self.runtime_name} runtime has no replicated job {name!r}")

    def job_of(self, role: str) -> ReplicatedJob:
        """The replicated job whose pods a trainstack role's replicas become."""
        for job in self.replicated_jobs:
            if role in job.roles:
                return job
        raise KeyError(f"the {self.runtime_name} runtime runs no {role!r} role")

    @property
    def trainer_job(self) -> ReplicatedJob:
        (job,) = [j for j in self.replicated_jobs if j.trainer_ancestor]
        return job

    def injected_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(i.name for i in self.injected))


@dataclass(frozen=True)
class JobSetRules:
    """What JobSet and the TrainJob controller do on failure, success, deadline, deletion and
    after the end; the same for every runtime (trainstack.trainer.jobset cites each)."""

    api_version: str
    # The restartPolicy a pod template gets when it names none.
    default_pod_restart_policy: str
    # Without a failurePolicy the first failed child Job fails the JobSet.
    fails_without_failure_policy: bool
    # With one, a failure no rule matches gets this action.
    default_rule_action: FailureAction
    default_max_restarts: int
    # A restart deletes every Job whose restart-attempt label is below status.restarts and
    # creates them again: the whole set restarts, not the failed pod.
    restart_recreates_all_jobs: bool
    restart_label: str  # the label holding a Job's restart attempt
    # A finished JobSet (Completed or Failed) deletes its Jobs still active.
    deletes_active_jobs_when_finished: bool
    # JobSet's ttlSecondsAfterFinished when unset (None: never deleted) and what Trainer sets.
    default_ttl_seconds: int | None
    # The TrainJob's activeDeadlineSeconds counts from its creation (or its last resume).
    deadline_from_creation: bool
    # Past the deadline the TrainJob is Failed with this reason and its JobSet deleted.
    deadline_reason: str
    default_success_operator: SuccessOperator
