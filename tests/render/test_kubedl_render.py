"""Rendered jobs are what KubeDL v0.5.0 can run; each of
these failed at 8f06a63."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.render.conftest import CASES, SPECS
from trainstack.kubedl import job_kind
from trainstack.render import RenderOptions, render_run
from trainstack.spec import load_run


def _docs(name: str, **changes: Any) -> list[dict[str, Any]]:
    run = load_run(SPECS / name)
    return render_run(dataclasses.replace(run, **changes) if changes else run)


def _templates(job: dict[str, Any]) -> list[dict[str, Any]]:
    key = next((k for k in job["spec"] if k.endswith("ReplicaSpecs")), None)
    if key is None:
        return [job["spec"]["template"]]
    return [r["template"] for r in job["spec"][key].values()]


def test_mpi_config_map_cannot_collide_with_the_operators() -> None:
    docs = _docs("mpi.run.yaml")
    job = docs[-1]["metadata"]["name"]
    maps = [d["metadata"]["name"] for d in docs if d["kind"] == "ConfigMap"]
    assert f"{job}-config" not in maps  # KubeDL's: kubexec.sh and hostfile
    assert f"{job}-trainstack-config" in maps
    for t in _templates(docs[-1]):
        names = {v["configMap"]["name"] for v in t["spec"]["volumes"] if "configMap" in v}
        assert f"{job}-config" not in names


def test_mpi_launcher_runs_under_an_account_that_may_exec() -> None:
    docs = _docs("mpi.run.yaml")
    kinds = [d["kind"] for d in docs]
    assert kinds.index("RoleBinding") < kinds.index("MPIJob")
    account = next(d for d in docs if d["kind"] == "ServiceAccount")["metadata"]["name"]
    launcher = docs[-1]["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    assert launcher["serviceAccountName"] == account
    # a run's own ServiceAccount is bound instead of a new one
    own = _docs("mpi.run.yaml", service_account="hvd-runner")
    assert "ServiceAccount" not in [d["kind"] for d in own]
    binding = next(d for d in own if d["kind"] == "RoleBinding")
    assert binding["subjects"][0]["name"] == "hvd-runner"
    specs = own[-1]["spec"]["mpiReplicaSpecs"]
    assert specs["Launcher"]["template"]["spec"]["serviceAccountName"] == "hvd-runner"
    assert specs["Worker"]["template"]["spec"]["serviceAccountName"] == "hvd-runner"


def test_other_kinds_render_no_rbac() -> None:
    for name in ("pytorch.run.yaml", "tf.run.yaml", "xgboost.run.yaml"):
        assert not {"Role", "RoleBinding"} & {d["kind"] for d in _docs(name)}


def test_elasticbatch_job_is_marked_ready_for_its_workers() -> None:
    job = _docs("elasticbatch.run.yaml")[-1]
    assert job["metadata"]["annotations"]["aimaster"] == "ready"


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.name.startswith("kind-")], ids=lambda c: c.name
)
def test_template_restart_policy_only_where_it_is_not_overwritten(case) -> None:
    run = case.run()
    job = render_run(run, options=case.options)[-1]
    kind = job_kind(run.job_type)
    for t in _templates(job):
        assert ("restartPolicy" in t["spec"]) is (not kind.overwrites_template_restart_policy)
    if kind.by_kubedl:
        key = kind.replicas_key
        assert all("restartPolicy" in r for r in job["spec"][key].values())


def test_xgboost_keeps_its_job_long_enough_to_read() -> None:
    job = _docs("xgboost.run.yaml")[-1]
    assert job["spec"]["ttlSecondsAfterFinished"] == 86400  # KubeDL's default: 100 s
    assert (
        _docs("xgboost.run.yaml", keep_seconds=3600)[-1]["spec"]["ttlSecondsAfterFinished"] == 3600
    )
    run = load_run(SPECS / "xgboost.run.yaml")
    options = RenderOptions(ttl_seconds_after_finished=7200)
    assert render_run(run, options=options)[-1]["spec"]["ttlSecondsAfterFinished"] == 7200
    # other kinds keep the operator's default (none) unless asked
    assert "ttlSecondsAfterFinished" not in _docs("pytorch.run.yaml")[-1]["spec"]
    assert (
        _docs("mpi.run.yaml", keep_seconds=60)[-1]["spec"]["runPolicy"]["ttlSecondsAfterFinished"]
        == 60
    )


def test_every_replica_gets_its_role_and_index() -> None:
    for name in ("xgboost.run.yaml", "custom.run.yaml"):
        for t in _templates(_docs(name)[-1]):
            env = {e["name"]: e for e in t["spec"]["containers"][0]["env"]}
            assert env["TRAINSTACK_ROLE"]["value"] == t["metadata"]["labels"]["trainstack.dev/role"]
            assert "fieldRef" in env["TRAINSTACK_REPLICA_INDEX"]["valueFrom"]
