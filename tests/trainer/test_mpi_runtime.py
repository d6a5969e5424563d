"""An MPI run on a Kubeflow Trainer environment: its own TrainingRuntime, with the pod templates
KubeDL's MPIJob gets, and a TrainJob naming it. The runtime has the shape Trainer v2.3.0's CRD
requires (pkg/apis/trainer/v1alpha1/trainingruntime_types.go:106-133, 171-206, 271-299; the
JobSet template JobSet v0.12.0 api/jobset/v1alpha2/jobset_types.go:120-600), as the TrainJob's is
checked in test_trainjob_shape."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.render.conftest import ON_TRAINER, SPECS
from tests.trainer.test_trainjob_shape import INT, OBJ, STR, TRAIN_JOB, _problems
from trainstack.render import render_run
from trainstack.render.options import RenderError
from trainstack.render.trainjob import not_carried
from trainstack.spec import load_run
from trainstack.spec.model import Run
from trainstack.trainer import Operator
from trainstack.trainer.mpi import SSH_AUTH_MOUNT_PATH, SSH_PORT

MPI_POLICY = {  # trainingruntime_types.go:271-299
    "numProcPerNode": INT,
    "mpiImplementation": STR,
    "sshAuthMountPath": STR,
    "runLauncherAsNode": bool,
}
ML_POLICY = {"numNodes": INT, "torch": OBJ, "mpi": MPI_POLICY, "jax": OBJ, "xgboost": OBJ}
REPLICATED_JOB = {  # jobset_types.go:321-354
    "name": STR,
    "groupName": STR,
    "template": {"metadata": OBJ, "spec": OBJ},  # a batch/v1 JobTemplateSpec
    "replicas": INT,
    "dependsOn": [{"name": STR, "status": STR}],
}
JOBSET_SPEC = {  # jobset_types.go:120-198
    "replicatedJobs": [REPLICATED_JOB],
    "network": {"enableDNSHostnames": bool, "subdomain": STR, "publishNotReadyAddresses": bool},
    "successPolicy": {"operator": STR, "targetReplicatedJobs": [STR]},
    "failurePolicy": {"maxRestarts": INT, "restartStrategy": STR, "rules": [OBJ]},
    "startupPolicy": OBJ,
    "suspend": bool,
    "coordinator": OBJ,
    "managedBy": STR,
    "ttlSecondsAfterFinished": INT,
    "volumeClaimPolicies": [OBJ],
}
TRAINING_RUNTIME = {
    "apiVersion": STR,
    "kind": STR,
    "metadata": OBJ,
    "spec": {
        "mlPolicy": ML_POLICY,
        "podGroupPolicy": OBJ,
        "template": {"metadata": OBJ, "spec": JOBSET_SPEC},
    },
}


def _rendered(run: Run) -> tuple[dict[str, Any], dict[str, Any]]:
    docs = render_run(run, options=ON_TRAINER)
    kinds = [d["kind"] for d in docs]
    # the runtime first: the TrainJob names it (the run program creates what is beside the job
    # before it and deletes it after)
    assert kinds[-2:] == ["TrainingRuntime", "TrainJob"]
    return docs[-2], docs[-1]


def _run(name: str = "mpi.run.yaml") -> Run:
    return load_run(SPECS / name)


def test_an_mpi_run_renders_its_own_runtime_and_a_trainjob_naming_it() -> None:
    """Before, an MPI run on a Trainer environment was refused at render."""
    runtime, job = _rendered(_run())
    # (prefixed: the TrainJob's required fields are keyed by path)
    problems = [
        p for k, v in runtime.items() for p in _problems(v, TRAINING_RUNTIME[k], f"runtime.{k}")
    ]
    problems += [p for k, v in job.items() for p in _problems(v, TRAIN_JOB[k], k)]
    assert not problems, "\n".join(problems)
    assert runtime["metadata"]["name"] == job["metadata"]["name"]
    assert runtime["metadata"]["namespace"] == job["metadata"]["namespace"]
    assert job["spec"]["runtimeRef"] == {"name": job["metadata"]["name"], "kind": "TrainingRuntime"}
    assert job["spec"]["trainer"] == {"numNodes": 3}  # the launcher and two workers
    mpi = runtime["spec"]["mlPolicy"]["mpi"]
    assert mpi == {
        "numProcPerNode": 2,  # the worker's GPUs, KubeDL's slotsPerWorker
        "mpiImplementation": "OpenMPI",
        "sshAuthMountPath": SSH_AUTH_MOUNT_PATH,
        "runLauncherAsNode": True,
    }
    spec = runtime["spec"]["template"]["spec"]
    assert spec["failurePolicy"] == {"maxRestarts": 2}  # the run's faultTolerance, carried
    assert spec["successPolicy"] == {"operator": "All", "targetReplicatedJobs": ["launcher"]}
    node, launcher = spec["replicatedJobs"]
    assert (node["name"], launcher["name"]) == ("node", "launcher")
    assert "dependsOn" not in node  # JobSet refuses it on the first
    assert launcher["dependsOn"] == [{"name": "node", "status": "Ready"}]
    assert launcher["template"]["metadata"]["labels"] == {
        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"
    }


def _pods(runtime: dict[str, Any]) -> dict[str, dict[str, Any]]:
    jobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    return {j["name"]: j["template"]["spec"]["template"] for j in jobs}


def test_its_pods_are_the_mpijobs_with_sshd_on_the_workers() -> None:
    run = _run()
    runtime, _ = _rendered(run)
    (mpijob,) = [d for d in render_run(run) if d["kind"] == "MPIJob"]
    kubedl = {
        role.lower(): spec["template"] for role, spec in mpijob["spec"]["mpiReplicaSpecs"].items()
    }
    pods = _pods(runtime)
    for job, role in (("node", "worker"), ("launcher", "launcher")):
        pod, theirs = pods[job]["spec"], kubedl[role]["spec"]
        assert pods[job]["metadata"]["labels"]["trainstack.dev/role"] == role
        (main,) = pod["containers"]
        (kmain,) = theirs["containers"]
        assert main["name"] == "node"  # where the plugin mounts the keys and the hostfile
        for field in ("image", "resources", "workingDir"):
            assert main[field] == kmain[field], field
        # and the checkout, which KubeDL's git-sync mounts itself
        assert [m for m in main["volumeMounts"] if m["name"] != "git-sync"] == kmain["volumeMounts"]
        for field in ("nodeSelector", "tolerations", "affinity", "imagePullSecrets"):
            assert pod.get(field) == theirs.get(field), field
        assert pod["restartPolicy"] == "Never"
        assert pod["securityContext"] == {**theirs["securityContext"], "fsGroup": 1000}
        assert {e["name"] for e in main["env"]} >= {e["name"] for e in kmain["env"]}
        (index,) = [e for e in main["env"] if e["name"] == "TRAINSTACK_REPLICA_INDEX"]
        assert "job-completion-index" in index["valueFrom"]["fieldRef"]["fieldPath"]
    worker = pods["node"]["spec"]["containers"][0]
    assert worker["readinessProbe"] == {"tcpSocket": {"port": SSH_PORT}}
    script = worker["command"][-1]
    assert "exec sleep" not in script
    assert (
        f"Port {SSH_PORT}" in script and "-D -e -f /ml/home/.trainstack-sshd/sshd_config" in script
    )
    launcher = pods["launcher"]["spec"]["containers"][0]
    assert launcher["command"] == kubedl["launcher"]["spec"]["containers"][0]["command"]
    (agent,) = [e for e in launcher["env"] if e["name"] == "OMPI_MCA_plm_rsh_agent"]
    assert f"-p {SSH_PORT} -i {SSH_AUTH_MOUNT_PATH}/id_rsa" in agent["value"]
    # git code: KubeDL's annotation does nothing on Trainer; our git-sync init container does
    assert [c["name"] for c in pods["node"]["spec"]["initContainers"]] == ["git-sync-code"]


def test_plan_notes_that_the_image_needs_sshd() -> None:
    run = _run()
    notes = not_carried(Operator.TRAINER, run)
    assert any("OpenSSH" in n and "sshd" in n for n in notes)
    assert not_carried(Operator.KUBEDL, run) == []


def test_without_fault_tolerance_the_set_is_not_restarted() -> None:
    run = dataclasses.replace(_run(), fault_tolerance=None)
    runtime, _ = _rendered(run)
    assert runtime["spec"]["template"]["spec"]["failurePolicy"].get("maxRestarts", 0) == 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"run_as_user": 0}, "cannot run as root"),
        ({"env": {"OMPI_MCA_orte_keep_fqdn_hostnames": "0"}}, "is set by Kubeflow Trainer"),
    ],
)
def test_what_it_cannot_be_is_one_clear_error(change: dict[str, Any], message: str) -> None:
    from trainstack.spec.model import FrozenMap

    run = _run()
    if "env" in change:
        change = {"env": FrozenMap({**dict(run.env), **change["env"]})}
    with pytest.raises(RenderError, match=message) as caught:
        render_run(dataclasses.replace(run, **change), options=ON_TRAINER)
    assert caught.value.hint


def test_git_code_on_trainer_is_an_init_container_no_kubedl_reads_an_annotation_there() -> None:
    """KubeDL's git-sync annotation does nothing on a Trainer environment: an MPI run's own
    runtime carries trainstack's git-sync init container; a PyTorch run's TrainJob, which cannot
    add one, is refused (docs/render.md), where before it rendered without its code."""
    pytorch = load_run(SPECS / "pytorch.run.yaml")
    git = _run().component.code
    run = dataclasses.replace(pytorch, component=dataclasses.replace(pytorch.component, code=git))
    with pytest.raises(RenderError, match="code from git"):
        render_run(run, options=ON_TRAINER)
    _, job = _rendered(_run())
    assert "kubedl.io/git-sync-config" not in (job["metadata"].get("annotations") or {})
