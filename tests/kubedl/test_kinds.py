"""The job-kind model is internally consistent and matches what KubeDL v0.5.0 does."""

from __future__ import annotations

import pytest

from trainstack.kubedl import (
    KINDS,
    JobType,
    SuccessRule,
    job_kind,
    mpi_hostfile,
    reserved_env,
)


@pytest.mark.parametrize("job_type", list(JobType))
def test_every_kind_is_consistent(job_type: JobType) -> None:
    kind = job_kind(job_type)
    assert kind.job_type is job_type
    names = kind.role_names
    assert len(set(names)) == len(names)
    assert kind.primary_role in names
    for role in kind.roles:
        assert role.starts_after is None or role.starts_after in names
        assert not (role.refused and role.required)
        assert role.gets_pod or not role.gets_service
    for inj in kind.injected:
        assert set(inj.roles) <= set(names), inj
    # what a run gets without resources satisfies the kind's own requirements
    defaults = dict(kind.default_resources)
    assert set(kind.required_roles) <= set(defaults)
    assert set(kind.required_roles) <= set(dict(kind.scaffold_roles))
    assert all(defaults[r] == 1 for r in kind.singleton_roles if r in defaults)


def test_lookup_by_spelling() -> None:
    assert job_kind("pytorch") is KINDS[JobType.PYTORCH]
    with pytest.raises(ValueError):
        job_kind("pytorhc")


def test_operator_facts() -> None:
    tf = job_kind(JobType.TENSORFLOW)
    assert not tf.role("evaluator").gets_pod and tf.role("evaluator").refused
    assert tf.success is SuccessRule.CHIEF_ELSE_WORKER0
    torch = job_kind(JobType.PYTORCH)
    assert torch.role("worker").starts_after == "master"
    assert [r.name for r in torch.roles if r.gets_service] == ["master"]
    assert job_kind(JobType.MPI).role("launcher").starts_after == "worker"
    assert job_kind(JobType.XGBOOST).operator_ttl_seconds == 100
    assert job_kind(JobType.ELASTICBATCH).readiness_annotation == ("aimaster", "ready")
    assert job_kind(JobType.MPI).operator_config_map("j") == "j-config"
    assert not job_kind(JobType.CUSTOM).overwrites_template_restart_policy


def test_reserved_names_follow_the_kind() -> None:
    assert "JOB_COMPLETION_INDEX" in reserved_env(JobType.CUSTOM)
    # set on the AIMaster only (as metadata): the run's other roles may use them
    assert not {"NAMESPACE", "JOB_TYPE"} & reserved_env(JobType.ELASTICBATCH)
    assert "ElASTICBATCH_CONFIG" in reserved_env(JobType.ELASTICBATCH)
    assert "RANK" in reserved_env(JobType.PYTORCH)
    assert "RANK" not in reserved_env(JobType.CUSTOM)
    assert "PYTHONUNBUFFERED" not in reserved_env(JobType.TENSORFLOW)


def test_mpi_hostfile_lists_the_launcher_first() -> None:
    assert mpi_hostfile("j", 2, 4) == (
        "j-launcher-0 slots=4\nj-worker-0 slots=4\nj-worker-1 slots=4\n"
    )
