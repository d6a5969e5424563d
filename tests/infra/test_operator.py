"""The operator that runs an environment's jobs is the environment's choice
(`trainstack:operator` in Pulumi.<env>.yaml): KubeDL unless it names Kubeflow Trainer, a bad
value one error naming the file, the key and the values allowed; a job type Trainer has no
runtime for is refused at `plan` and `render --env`, naming the environments that can run it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.clirunner import Cli
from tests.trainer.environments import TRAINER_ENV, trainer_project
from trainstack.errors import ConfigError
from trainstack.infra.run.options import PlatformOutputs
from trainstack.trainer import Operator

REPO = Path(__file__).resolve().parents[2]
TF_RUN = REPO / "components/census-tf/runs/ps-4-workers.yaml"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The platform project with its shipped environments (`local-trainer`: local's cluster on
    Kubeflow Trainer)."""
    trainer_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _plan(*args: str | Path) -> dict[str, Any]:
    done = Cli().invoke("plan", *args, "--json")
    assert done.code == 0, done.output
    return json.loads(done.out)  # type: ignore[no-any-return]


def test_an_environment_runs_kubedl_unless_it_names_trainer(project: Path) -> None:
    kubedl = _plan("--env", "local")["outputs"]
    assert kubedl["operator"] == "kubedl" and "trainerVersion" not in kubedl
    trainer = _plan("--env", TRAINER_ENV)["outputs"]
    assert trainer["operator"] == "trainer"
    # which releases it installed, as kubedlVersion says KubeDL's
    assert (trainer["trainerVersion"], trainer["jobsetVersion"]) == ("v2.3.0", "v0.12.0")


def test_a_bad_operator_is_one_error_naming_file_key_and_values(project: Path) -> None:
    text = (project / "Pulumi.local.yaml").read_text() + "  trainstack:operator: kubeflow\n"
    (project / "Pulumi.bad.yaml").write_text(text)
    done = Cli().invoke("plan", "--env", "bad")
    assert done.code == 2, done.output
    assert "Pulumi.bad.yaml: trainstack:operator: expected one of kubedl, trainer" in done.err
    assert "kubeflow" in done.err and "Traceback" not in done.output


def test_a_platform_without_the_output_runs_kubedl() -> None:
    assert PlatformOutputs.read({}, "old").operator is Operator.KUBEDL
    assert PlatformOutputs.read({"operator": "trainer"}, "x").operator is Operator.TRAINER
    with pytest.raises(ConfigError, match="output operator: expected kubedl or trainer"):
        PlatformOutputs.read({"operator": "volcano"}, "x")


def test_plan_refuses_a_tensorflow_run_on_trainer_naming_kubedl_environments(
    project: Path,
) -> None:
    done = Cli().invoke("plan", TF_RUN, "--env", TRAINER_ENV)
    assert done.code == 2, done.output
    err = done.err
    assert "environment 'local-trainer' runs its jobs on trainer" in err
    assert "cannot run a tensorflow job" in err and "no TensorFlow runtime" in err
    assert "environments that can run it (operator kubedl): ack-dev, local" in err
    assert "Traceback" not in done.output


def test_render_env_refuses_it_too_and_kubedl_environments_still_plan_it(project: Path) -> None:
    done = Cli().invoke("render", TF_RUN, "--env", TRAINER_ENV)
    assert done.code == 2, done.output
    assert "cannot run a tensorflow job" in done.err and "ack-dev, local" in done.err
    assert _plan(TF_RUN, "--env", "ack-dev")["outputs"]["kind"] == "TFJob"


MNIST = REPO / "components/mnist-ddp/runs/local.yaml"


def _job(plan: dict[str, Any]) -> dict[str, Any]:
    (job,) = [
        r["inputs"]
        for r in plan["resources"]
        if r["inputs"].get("kind") in ("TrainJob", "PyTorchJob")
    ]
    return job  # type: ignore[no-any-return]


def test_a_trainer_environment_plans_mnist_ddp_as_a_trainjob(project: Path) -> None:
    planned = _plan(MNIST, "--env", TRAINER_ENV)
    job = _job(planned)
    assert (job["apiVersion"], job["kind"]) == ("trainer.kubeflow.org/v1alpha1", "TrainJob")
    spec = job["spec"]
    assert spec["runtimeRef"] == {"name": "torch-distributed", "kind": "ClusterTrainingRuntime"}
    assert spec["trainer"]["numNodes"] == 3  # one master and two workers
    assert spec["trainer"]["resourcesPerNode"]["limits"] == {"cpu": "1", "memory": "2Gi"}
    names = {e["name"] for e in spec["trainer"]["env"]}
    assert {"PAI_WORKING_DIR", "PAI_OUTPUT_MODEL", "TRAINSTACK_ROLE"} <= names
    # the same run on a KubeDL environment is still a PyTorchJob
    assert _job(_plan(MNIST, "--env", "local"))["kind"] == "PyTorchJob"


def test_what_a_trainjob_cannot_say_is_one_error_at_plan(project: Path) -> None:
    run = project / "uneven.yaml"
    text = MNIST.read_text().replace("../component.yaml", str(MNIST.parents[1] / "component.yaml"))
    run.write_text(text.replace("worker: {replicas: 2, cpu: 1", "worker: {replicas: 2, cpu: 2"))
    done = Cli().invoke("plan", run, "--env", TRAINER_ENV)
    assert done.code == 2, done.output
    assert "a TrainJob's nodes are alike, but the roles ask for different resources" in done.err
    assert "Traceback" not in done.output


def _variant(project: Path, old: str, new: str) -> Path:
    run = project / "variant.yaml"
    text = MNIST.read_text().replace("../component.yaml", str(MNIST.parents[1] / "component.yaml"))
    assert old in text
    run.write_text(text.replace(old, new))
    return run


def test_a_run_with_a_priority_names_the_runtime_of_that_priority(project: Path) -> None:
    """A TrainJob cannot set its pods' priority class (no priorityClassName in a PodSpecPatch):
    the run names the runtime the platform installed for its class instead."""
    run = _variant(project, "  resources:", "  priority: 5\n  resources:")
    spec = _job(_plan(run, "--env", TRAINER_ENV))["spec"]
    assert spec["runtimeRef"]["name"] == "torch-distributed-priority-5"
    planned = _plan("--env", TRAINER_ENV)["resources"]
    (runtime,) = [
        r["inputs"]
        for r in planned
        if r["type"].endswith(":ClusterTrainingRuntime")
        and r["inputs"]["metadata"]["name"] == "torch-distributed-priority-5"
    ]
    pods = [
        j["template"]["spec"]["template"]["spec"]
        for j in runtime["spec"]["template"]["spec"]["replicatedJobs"]
    ]
    assert {p["priorityClassName"] for p in pods} == {"trainstack-priority-5"}


def test_every_node_gets_the_largest_shared_memory_a_role_asks_for(project: Path) -> None:
    run = _variant(
        project, "worker: {replicas: 2, cpu: 1", "worker: {replicas: 2, sharedMemory: 1Gi, cpu: 1"
    )
    spec = _job(_plan(run, "--env", TRAINER_ENV))["spec"]
    (patch,) = spec["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"][
        "replicatedJobs"
    ]
    volumes = {v["name"]: v for v in patch["template"]["spec"]["template"]["spec"]["volumes"]}
    shm = [v for v in volumes.values() if v.get("emptyDir", {}).get("medium") == "Memory"]
    assert [v["emptyDir"]["sizeLimit"] for v in shm] == ["1Gi"]


def test_plan_says_the_runs_restart_budget_is_not_carried_on_trainer(project: Path) -> None:
    """mnist-ddp's local run asks for faultTolerance.maxRestarts 2; a TrainJob has no field for
    it and the runtime's JobSet restarts the whole set up to 3 times: plan says so, where before
    the 2 was dropped without a word. On KubeDL nothing is said."""
    (note,) = _plan(MNIST, "--env", TRAINER_ENV)["notes"]
    assert note.startswith("faultTolerance.maxRestarts 2 is not carried")
    assert "up to 3 times" in note
    assert _plan(MNIST, "--env", "local")["notes"] == []
    done = Cli().invoke("plan", MNIST, "--env", TRAINER_ENV)
    assert "note: faultTolerance.maxRestarts 2 is not carried" in done.out
