"""The Trainer runtime model is internally consistent and holds the facts of Kubeflow Trainer
v2.3.0 and JobSet v0.12.0 that rendering, the contract and the local runner will rely on."""

from __future__ import annotations

import dataclasses

import pytest

from trainstack.errors import UserError
from trainstack.kubedl import JobType, job_kind
from trainstack.trainer import (
    BATCH_JOB_TYPES,
    JOBSET,
    NO_RUNTIME,
    RUNTIMES,
    TRAINJOB_API_VERSION,
    FailureAction,
    MLPolicy,
    SuccessOperator,
    pod_address,
    pod_hostname,
    runtime,
)


def test_every_job_type_has_a_runtime_a_refusal_or_stays_a_job() -> None:
    kinds = [set(RUNTIMES), set(NO_RUNTIME), set(BATCH_JOB_TYPES)]
    assert set.union(*kinds) == set(JobType)
    assert sum(len(k) for k in kinds) == len(JobType)  # each in exactly one


@pytest.mark.parametrize("job_type", sorted(RUNTIMES))
def test_every_runtime_is_consistent(job_type: JobType) -> None:
    rt = runtime(job_type)
    assert rt.job_type is job_type
    kind = job_kind(job_type)
    # every trainstack role of the kind lands in exactly one replicated job
    placed = [role for job in rt.replicated_jobs for role in job.roles]
    assert sorted(placed) == sorted(kind.role_names)
    for role in kind.role_names:
        assert role in rt.job_of(role).roles
    names = [j.name for j in rt.replicated_jobs]
    assert len(set(names)) == len(names)
    assert all(dep in names for job in rt.replicated_jobs for dep, _ in job.depends_on)
    assert set(rt.success_targets) <= set(names)
    # the plugin injects only into roles the kind has, and reserves exactly what it injects
    for inj in rt.injected:
        assert set(inj.roles) <= set(kind.role_names), inj
    assert rt.reserved == frozenset(rt.injected_names())
    assert rt.trainer_job.trainer_ancestor  # exactly one job takes the TrainJob's trainer


def test_records_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        RUNTIMES[JobType.PYTORCH].runtime_name = "x"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        JOBSET.default_max_restarts = 3  # type: ignore[misc]


def test_torch_facts() -> None:
    torch = runtime("pytorch")
    assert (torch.runtime_name, torch.shipped, torch.ml_policy) == (
        "torch-distributed",
        True,
        MLPolicy.TORCH,
    )
    # master and workers are the `node` job's pods: numNodes = 1 + workers
    assert torch.job_of("master") is torch.job_of("worker") is torch.job("node")
    assert torch.container == "node" and torch.port == 29500
    assert torch.injected_names() == (
        "PET_NNODES",
        "PET_NPROC_PER_NODE",
        "PET_NODE_RANK",
        "PET_MASTER_ADDR",
        "PET_MASTER_PORT",
    )
    assert torch.success_operator is SuccessOperator.ALL and torch.success_targets == ()


def test_xgboost_facts() -> None:
    xgb = runtime(JobType.XGBOOST)
    assert xgb.runtime_name == "xgboost-distributed" and xgb.ml_policy is MLPolicy.XGBOOST
    assert set(xgb.injected_names()) == {
        "DMLC_TRACKER_URI",
        "DMLC_TRACKER_PORT",
        "DMLC_TASK_ID",
        "DMLC_NUM_WORKER",
    }
    assert xgb.job_of("master").name == "node" and xgb.port == 29500


def test_mpi_facts() -> None:
    mpi = runtime(JobType.MPI)
    # Trainer ships MPI only inside DeepSpeed and MLX runtimes: each run renders its own
    assert not mpi.shipped and mpi.per_run and mpi.ml_policy is MLPolicy.MPI
    assert mpi.job_of("launcher").name == "launcher" and mpi.trainer_job.name == "launcher"
    node = mpi.job_of("worker")
    assert node.name == "node" and not node.runs_command
    assert mpi.job("launcher").depends_on == (("node", "Ready"),)
    # the launcher hosts ranks as KubeDL's does (runLauncherAsNode); JobSet needs the nodes first
    assert mpi.success_targets == ("launcher",) and mpi.launcher_is_node
    assert [j.name for j in mpi.replicated_jobs] == ["node", "launcher"]
    assert {i.roles for i in mpi.injected} == {("launcher",)}
    assert "OMPI_MCA_orte_default_hostfile" in mpi.reserved


@pytest.mark.parametrize("job_type", [JobType.TENSORFLOW, JobType.ELASTICBATCH, JobType.CUSTOM])
def test_types_without_a_runtime_are_one_clear_error(job_type: JobType) -> None:
    with pytest.raises(UserError, match=f"a {job_type} job has no Kubeflow Trainer runtime"):
        runtime(job_type)


def test_jobset_rules() -> None:
    assert TRAINJOB_API_VERSION == "trainer.kubeflow.org/v1alpha1"
    assert JOBSET.api_version == "jobset.x-k8s.io/v1alpha2"
    # a failed container restarts in its pod first; a failed Job fails the set unless a
    # failure policy restarts the whole set, and maxRestarts defaults to none
    assert JOBSET.default_pod_restart_policy == "OnFailure"
    assert JOBSET.fails_without_failure_policy
    assert JOBSET.default_rule_action is FailureAction.RESTART_JOBSET
    assert JOBSET.default_max_restarts == 0 and JOBSET.restart_recreates_all_jobs
    assert JOBSET.deletes_active_jobs_when_finished
    assert JOBSET.default_ttl_seconds is None
    assert JOBSET.deadline_from_creation and JOBSET.deadline_reason == "DeadlineExceeded"
    assert JOBSET.default_success_operator is SuccessOperator.ALL


def test_pod_names() -> None:
    assert pod_hostname("mnist", "node", 0, 3) == "mnist-node-0-3"
    # PET_MASTER_ADDR and DMLC_TRACKER_URI name this pod
    assert pod_address("mnist", "node", 0) == "mnist-node-0-0.mnist"


@pytest.mark.parametrize("run_file", ["tf.run.yaml", "elasticbatch.run.yaml"])
def test_the_renderer_refuses_a_job_trainer_cannot_run_whoever_renders_it(run_file: str) -> None:
    """deploy (and a sweep's trials) render without plan's check: before, a TensorFlow run on a
    Trainer environment rendered as a TFJob and deployed to KubeDL beside Trainer."""
    from tests.render.conftest import ON_TRAINER, SPECS
    from trainstack.render import render_run
    from trainstack.render.options import RenderError
    from trainstack.spec import load_run

    with pytest.raises(RenderError, match="cannot run on Kubeflow Trainer") as caught:
        render_run(load_run(SPECS / run_file), options=ON_TRAINER)
    assert caught.value.hint is not None and "kubedl" in caught.value.hint
