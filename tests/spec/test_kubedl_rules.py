"""Validation follows the job-kind model (trainstack.kubedl): the roles KubeDL v0.5.0 runs, the
names it sets, the options it has. Each case passed validation at 8f06a63."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.spec.rulekit import Kit, component, run
from trainstack.contract import ContractError
from trainstack.kubedl import CONTRACT_NAMES, JobType, job_kind, operator_env, reserved_env
from trainstack.render import render_run
from trainstack.spec.model import FrozenMap

_RESOURCES = {
    JobType.TENSORFLOW: {"chief": {"replicas": 1}, "worker": {"replicas": 2}},
    JobType.PYTORCH: {"master": {"replicas": 1}, "worker": {"replicas": 1}},
    JobType.XGBOOST: {"master": {"replicas": 1}, "worker": {"replicas": 1}},
    JobType.ELASTICBATCH: {"aimaster": {"replicas": 1}, "worker": {"replicas": 2}},
    JobType.MPI: {"launcher": {"replicas": 1}, "worker": {"replicas": 2}},
    JobType.CUSTOM: {"worker": {"replicas": 2}},
}


@pytest.fixture
def kit(tmp_path: Path) -> Kit:
    return Kit(tmp_path)


def _kind_run(kind: JobType, **spec: object) -> tuple[dict[str, object], dict[str, object]]:
    return run(resources=_RESOURCES[kind], **spec), component(jobType=kind.value)


def test_job_completion_index_is_refused_by_validate_as_by_render(kit: Kit) -> None:
    data, comp = _kind_run(JobType.CUSTOM, env={"JOB_COMPLETION_INDEX": "7"})
    assert kit.run_errors(data, comp) == [
        (
            "spec.env.JOB_COMPLETION_INDEX",
            "JOB_COMPLETION_INDEX is set by KubeDL for a custom job and cannot be overridden",
        )
    ]


@pytest.mark.parametrize("kind", list(JobType))
def test_validate_and_render_agree_on_every_reserved_name(kit: Kit, kind: JobType) -> None:
    """Every name the model reserves for a kind is refused by `validate`, and a run that carries
    it anyway (built past the loader) is refused by render; a name another kind reserves is
    accepted by both."""
    base, comp = _kind_run(kind)
    ok = kit.ok_run(base, comp)
    for name in sorted(reserved_env(kind)):
        data, comp = _kind_run(kind, env={name: "7"})
        errors = kit.run_errors(data, comp)
        assert [p for p, _ in errors] == [f"spec.env.{name}"], (name, errors)
        smuggled = dataclasses.replace(ok, env=FrozenMap({name: "7"}))
        with pytest.raises(ContractError, match=name):
            render_run(smuggled)
    others = set().union(*(operator_env(k) for k in JobType)) - reserved_env(kind)
    for name in sorted(others - set(CONTRACT_NAMES)):
        data, comp = _kind_run(kind, env={name: "7"})
        loaded = kit.ok_run(data, comp)
        assert render_run(loaded)


@pytest.mark.parametrize("name", ["NAMESPACE", "JOB_TYPE"])
def test_elasticbatch_aimaster_names_are_the_runs_elsewhere(kit: Kit, name: str) -> None:
    """KubeDL sets NAMESPACE and JOB_TYPE on the AIMaster's container only
    (apis/inference/v1alpha1/defaults.go, setDefaultAIMasterEnv). The run's workers may use the
    names; on the AIMaster KubeDL's value wins, locally as on the cluster."""
    from trainstack.contract import Topology, replica_env

    data, comp = _kind_run(JobType.ELASTICBATCH, env={name: "mine"})
    run = kit.ok_run(data, comp)
    topology = Topology.cluster(run, "team-a", "eb")
    assert replica_env(run, "worker", 0, topology=topology)[name] == "mine"
    aimaster = replica_env(run, "aimaster", 0, topology=topology)[name]
    assert aimaster == {"NAMESPACE": "team-a", "JOB_TYPE": "ELASTICBATCH"}[name]
    assert render_run(run)


def test_tf_evaluator_is_refused_with_the_reason(kit: Kit) -> None:
    data, comp = _kind_run(JobType.TENSORFLOW)
    data["spec"]["resources"]["evaluator"] = {"replicas": 1}  # type: ignore[index]
    errors = kit.run_errors(data, comp)
    assert [p for p, _ in errors] == ["spec.resources.evaluator"]
    assert "never creates an Evaluator pod" in errors[0][1]


def test_elasticbatch_needs_an_aimaster(kit: Kit) -> None:
    comp = component(jobType="elasticbatch")
    errors = kit.run_errors(run(resources={"worker": {"replicas": 2}}), comp)
    assert errors == [
        (
            "spec.resources",
            "a elasticbatch job needs a 'aimaster' role: KubeDL "
            "v0.5.0 never writes a status for an ElasticBatchJob without an AIMaster",
        )
    ]


def test_elasticbatch_without_resources_gets_an_aimaster(kit: Kit) -> None:
    loaded = kit.ok_run(run(), component(jobType="elasticbatch"))
    assert dict(loaded.resources).keys() == {"worker", "aimaster"}
    assert job_kind(JobType.ELASTICBATCH).required_roles == ("aimaster",)


def test_create_svc_for_all_workers_is_refused(kit: Kit) -> None:
    errors = kit.run_errors(run(advanced={"createSvcForAllWorkers": True}))
    assert [p for p, _ in errors] == ["spec.advanced.createSvcForAllWorkers"]
    assert "KubeDL has no option" in errors[0][1]
    assert kit.ok_run(run(advanced={"createSvcForAllWorkers": False}))


def test_keep_after_finished_is_a_duration(kit: Kit) -> None:
    assert kit.ok_run(run(keepAfterFinished="1d")).keep_seconds == 86400
    assert kit.ok_run(run(keepAfterFinished=600)).keep_seconds == 600
    assert [p for p, _ in kit.run_errors(run(keepAfterFinished="soon"))] == [
        "spec.keepAfterFinished"
    ]
