"""Outputs that persist on a cluster: unbound outputs and $METRICS go to the platform's
artifact store; without one, rendering for an environment refuses instead of losing them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.clirunner import Cli
from trainstack.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
README_JOB = REPO / "components" / "mnist-ddp" / "runs" / "local.yaml"  # README's main job
BASELINE = REPO / "components" / "mnist-ddp" / "runs" / "baseline.yaml"
KUBECONFIG_MODE = {
    "mode": "kubeconfig",
    "namespaces": {"vision": "team-vision", "nlp": "team-nlp"},
    "pullSecretName": "trainstack-registry",
    "ossAuth": {"type": "secret", "secretName": "trainstack-oss"},
    "artifactStore": "pvc://trainstack-artifacts/runs/",
}
ACK = {
    "mode": "ack",
    "region": "cn-hangzhou",
    "namespaces": {"vision": "team-vision"},
    "ossAuth": {"type": "rrsa", "roleName": "trainstack-jobs"},
    "artifactStore": "oss://acme-trainstack-artifacts/runs",
}


def rendered(path: Path, outputs: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    from trainstack.infra.run.rendered import for_platform
    from trainstack.spec import load_run

    return for_platform(load_run(path), outputs, "local")


def pod_specs(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    job = next(m for m in manifests if m["kind"] == "PyTorchJob")
    return [r["template"]["spec"] for r in job["spec"]["pytorchReplicaSpecs"].values()]


def where_mounted(pod: dict[str, Any], path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    (container,) = [c for c in pod["containers"] if c["name"] == "pytorch"]
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == path]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    return mount, volume


def test_every_output_and_metrics_of_the_readme_job_land_in_the_store() -> None:
    run, manifests = rendered(README_JOB, KUBECONFIG_MODE)
    assert {k: b.uri for k, b in run.outputs.items()} == {
        "model": "pvc://trainstack-artifacts/runs/vision/mnist-local/model/",
        "checkpoints": "pvc://trainstack-artifacts/runs/vision/mnist-local/checkpoints/",
    }
    for pod in pod_specs(manifests):
        env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
        assert env["PAI_OUTPUT_MODEL"] == "/ml/output/model/"
        assert env["PAI_OUTPUT_CHECKPOINTS"] == "/ml/output/checkpoints/"
        for path, sub in (
            ("/ml/output/model", "model"),
            ("/ml/output/checkpoints", "checkpoints"),
            ("/ml/metrics", "_metrics"),
        ):
            mount, volume = where_mounted(pod, path.rstrip("/"))
            assert volume["persistentVolumeClaim"]["claimName"] == "trainstack-artifacts"
            assert mount["subPath"] == f"runs/vision/mnist-local/{sub}"
            assert not mount.get("readOnly")
        assert not [v for v in pod["volumes"] if "emptyDir" in v and v["name"] == "metrics"]


def test_on_ack_the_store_is_an_oss_prefix_mounted_with_the_jobs_role() -> None:
    _, manifests = rendered(README_JOB, ACK)
    volumes = {m["metadata"]["name"]: m for m in manifests if m["kind"] == "PersistentVolume"}
    paths = sorted(v["spec"]["csi"]["volumeAttributes"]["path"] for v in volumes.values())
    assert paths == [
        "/runs/vision/_logs/mnist-local",  # expiring logs: infra/logplace.py
        "/runs/vision/mnist-local/_metrics",
        "/runs/vision/mnist-local/checkpoints",
        "/runs/vision/mnist-local/model",
    ]
    for v in volumes.values():
        attrs = v["spec"]["csi"]["volumeAttributes"]
        assert attrs["bucket"] == "acme-trainstack-artifacts"
        assert (attrs["authType"], attrs["roleName"]) == ("rrsa", "trainstack-jobs")


def test_bound_outputs_keep_their_binding() -> None:
    run, _ = rendered(BASELINE, {**ACK, "namespaces": {"vision": "vision"}})
    assert {k: b.uri for k, b in run.outputs.items()} == {
        "model": "oss://acme-trainstack-dev-models/vision/mnist/",
        "checkpoints": "oss://acme-trainstack-dev-checkpoints/vision/mnist/",
    }


def test_without_a_store_an_unbound_output_is_a_clear_error() -> None:
    no_store = {k: v for k, v in KUBECONFIG_MODE.items() if k != "artifactStore"}
    with pytest.raises(ConfigError) as caught:
        rendered(README_JOB, no_store)
    assert caught.value.message == (
        f"{README_JOB}: spec.outputs: model, checkpoints have no binding and environment "
        "'local' exports no artifact store (artifactStore), so they would be lost with the pods"
    )
    assert "bind each output" in (caught.value.hint or "")


def test_a_store_that_is_not_a_storage_uri_is_refused() -> None:
    with pytest.raises(ConfigError, match="is not an oss://, nas:// or pvc:// URI"):
        rendered(README_JOB, {**KUBECONFIG_MODE, "artifactStore": "s3://elsewhere/"})


# --- render --env and --project -------------------------------------------------------------


PVC_RUN = """\
apiVersion: trainstack.dev/v1
kind: Run
metadata: {name: mnist-pvc, tags: {team: vision}}
spec:
  component: COMPONENT
  parameters: {epochs: 1, optimizer: adam}
  inputs: {train: pvc://datasets/mnist/}
  outputs: {model: pvc://models/mnist/, checkpoints: pvc://models/mnist-ckpt/}
  resources:
    master: {replicas: 1, cpu: 1, memory: 2Gi}
"""


def pvc_run(tmp_path: Path) -> Path:
    path = tmp_path / "elsewhere" / "mnist-pvc.yaml"
    path.parent.mkdir(parents=True)
    component = REPO / "components" / "mnist-ddp" / "component.yaml"
    path.write_text(PVC_RUN.replace("COMPONENT", str(component)))
    return path


def test_render_env_renders_as_plan_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainstack.envfile import find_project
    from trainstack.infra.run.rendered import render
    from trainstack.plan.service import platform_outputs
    from trainstack.spec import load_run

    run_file = pvc_run(tmp_path)
    monkeypatch.chdir(tmp_path / "elsewhere")  # outside the platform project
    done = Cli().invoke("render", str(run_file), "--env", "local", "--project", str(REPO))
    assert done.code == 0, done.err
    docs = list(yaml.safe_load_all(done.out))
    outputs, _ = platform_outputs(find_project(REPO), "local")
    assert docs == render(load_run(run_file), outputs, "local")
    assert {d["metadata"].get("namespace") for d in docs} == {"vision"}


def test_the_project_comes_from_the_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_file = pvc_run(tmp_path)
    monkeypatch.chdir(tmp_path / "elsewhere")
    monkeypatch.setenv("TRAINSTACK_PROJECT", str(REPO))
    done = Cli().invoke("plan", str(run_file), "--env", "local", "--json")
    assert done.code == 0, done.err
    assert '"stack": "local.vision.mnist-pvc"' in done.out


def test_without_a_project_the_error_says_how_to_name_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_file = pvc_run(tmp_path)
    monkeypatch.chdir(tmp_path / "elsewhere")
    monkeypatch.delenv("TRAINSTACK_PROJECT", raising=False)
    done = Cli().invoke("render", str(run_file), "--env", "local")
    assert done.code == 2
    err = done.err
    assert "no Pulumi.yaml in" in err and "--project DIR or $TRAINSTACK_PROJECT" in err


def test_render_env_refuses_cluster_options_it_decides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = Cli().invoke(
        "render",
        str(pvc_run(tmp_path)),
        "--env",
        "local",
        "--project",
        str(REPO),
        "--namespace",
        "other",
    )
    assert done.code == 2
    assert "--namespace: --env local decides this" in done.err
