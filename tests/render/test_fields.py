"""Every run field lands somewhere real in the rendered objects."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from tests.render.conftest import SPECS
from trainstack.contract import ContractError, launch_command
from trainstack.render import RenderError, RenderOptions, render_run
from trainstack.spec import load_run


def _job(name: str, options: RenderOptions | None = None) -> dict:
    return render_run(load_run(SPECS / name), options=options)[-1]


def _replicas(job: dict) -> dict[str, dict]:
    return next(v for k, v in job["spec"].items() if k.endswith("ReplicaSpecs"))


def _main(template: dict) -> dict:
    return template["spec"]["containers"][0]


def _env(container: dict) -> dict[str, str]:
    """The literal values (TRAINSTACK_REPLICA_INDEX comes from the pod, by fieldRef)."""
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


def kubelet_expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion of command/args/env: `$$` → `$`, `$(NAME)` → its value when
    NAME is defined, anything else literal."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text):
            if text[i + 1] == "$":
                out.append("$")
                i += 2
                continue
            m = re.match(r"\(([A-Za-z_][A-Za-z0-9_]*)\)", text[i + 1 :])
            if m and m.group(1) in env:
                out.append(env[m.group(1)])
                i += 1 + m.end()
                continue
        out.append(text[i])
        i += 1
    return "".join(out)


def test_pytorch_fields() -> None:
    run = load_run(SPECS / "pytorch.run.yaml")
    job = render_run(run)[-1]
    reps = _replicas(job)
    assert set(reps) == {"Master", "Worker"} and reps["Worker"]["replicas"] == 3
    pod = reps["Worker"]["template"]
    spec, main = pod["spec"], _main(pod)
    assert main["name"] == "pytorch"
    assert main["resources"]["limits"] == {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"}
    assert main["resources"]["requests"] == main["resources"]["limits"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}} in spec[
        "volumes"
    ]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in main["volumeMounts"]
    # spot: placed on spot capacity, tolerated there; GPU: GPU nodes, GPU taint tolerated
    assert spec["nodeSelector"] == {
        "trainstack.dev/accelerator": "gpu",
        "trainstack.dev/capacity": "spot",
    }
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec[
        "tolerations"
    ]
    assert "nodeAffinity" not in spec["affinity"]
    # intelligent + GPUs: packed
    assert "podAffinity" in spec["affinity"] and "topologySpreadConstraints" not in spec
    assert spec["securityContext"] == {"runAsUser": 0}
    assert spec["imagePullSecrets"] == [{"name": "acme-registry"}]
    assert main["ports"] == [
        {"name": "pytorchjob-port", "containerPort": 23456},
        {"name": "custom-0", "containerPort": 10000},
        {"name": "custom-1", "containerPort": 10001},
        {"name": "custom-2", "containerPort": 10002},
    ]
    env = _env(main)
    assert env["CUSTOM_PORTS"] == "10000;10001;10002"
    assert not {"MASTER_ADDR", "RANK", "WORLD_SIZE", "TF_CONFIG"} & set(env)  # KubeDL's
    # kubelet expansion gives back exactly the contract's argv and env
    expanded_env = {k: kubelet_expand(v, {}) for k, v in env.items()}
    assert expanded_env["LITERAL"] == "$(JOB_NAME) stays $HOME"
    argv = [kubelet_expand(a, expanded_env) for a in main["command"] + main["args"]]
    assert argv == launch_command(run, "worker", in_pod=True)
    assert "a b; touch x $(id)" in argv


def test_tensorflow_fields() -> None:
    job = _job("tf.run.yaml")
    meta, spec = job["metadata"], job["spec"]
    assert meta["name"] == "tf-ps-run" and meta["namespace"] == "team-ranking"
    assert meta["labels"]["trainstack.dev/experiment"] == "tf-ps-nightly"
    assert meta["labels"]["tag.trainstack.dev/team"] == "ranking"
    assert json.loads(meta["annotations"]["trainstack.dev/tags"]) == {
        "purpose": "baseline,ablation"
    }  # ',' is not allowed in a label value
    assert meta["annotations"]["trainstack.dev/run-name"] == "tf-ps-run"
    git = json.loads(meta["annotations"]["kubedl.io/git-sync-config"])
    assert git == {
        "source": "https://github.com/acme/tf-ps.git",
        "branch": "main",
        "revision": "0123abcd",
        "destPath": "usercode",
    }
    assert spec["activeDeadlineSeconds"] == 12 * 3600 and spec["backoffLimit"] == 5
    assert spec["schedulingPolicy"] == {"priorityClassName": "trainstack-priority-7"}
    reps = _replicas(job)
    assert [(t, r["replicas"]) for t, r in reps.items()] == [("Chief", 1), ("PS", 2), ("Worker", 4)]
    for r in reps.values():
        assert r["restartPolicy"] == "ExitCode"
        pod = r["template"]["spec"]
        assert "restartPolicy" not in pod  # KubeDL overwrites it, with a Warning per pod
        assert pod["priorityClassName"] == "trainstack-priority-7"
        assert pod["serviceAccountName"] == "trainer"
        assert "podAffinity" in pod["affinity"]  # centralized
        assert _main(r["template"])["workingDir"] == "/ml"  # KubeDL mounts code at /ml/usercode
    assert "nodeSelector" not in reps["PS"]["template"]["spec"]  # a CPU role
    assert reps["Worker"]["template"]["spec"]["nodeSelector"] == {
        "trainstack.dev/accelerator": "gpu"
    }


def test_cpu_job_spreads_and_file_binding() -> None:
    docs = render_run(load_run(SPECS / "xgboost.run.yaml"))
    pv = next(
        d for d in docs if d["kind"] == "PersistentVolume" and "-in-train-" in d["metadata"]["name"]
    )
    assert pv["spec"]["csi"]["volumeAttributes"]["path"] == "/xgb"  # the file's directory
    pod = _replicas(docs[-1])["Worker"]["template"]
    assert "podAntiAffinity" in pod["spec"]["affinity"]
    assert pod["spec"]["topologySpreadConstraints"][0]["whenUnsatisfiable"] == "ScheduleAnyway"
    assert _env(_main(pod))["PAI_INPUT_TRAIN"] == "/ml/input/data/train/train.csv"
    prepare = pod["spec"]["initContainers"][0]
    assert "cp -R -- /ml/.staging/code/. /ml/usercode/" in prepare["command"][2]


def test_mpi_fields() -> None:
    job = _job("mpi.run.yaml")
    spec = job["spec"]
    assert spec["slotsPerWorker"] == 2 and spec["mainContainer"] == "mpi"
    assert spec["runPolicy"] == {"cleanPodPolicy": "Running", "backoffLimit": 2}
    for r in spec["mpiReplicaSpecs"].values():
        assert r["restartPolicy"] == "OnFailure"  # unconditional restarts
        assert "restartPolicy" not in r["template"]["spec"]
    worker = _main(spec["mpiReplicaSpecs"]["Worker"]["template"])
    assert worker["command"][2].endswith("exec sleep 2147483647")


def test_custom_is_an_indexed_job() -> None:
    job = _job("custom.run.yaml", RenderOptions(code_bucket="oss://acme-code/trainstack/"))
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["completions"] == 2
    env = _env(_main(job["spec"]["template"]))
    assert env["MODEL"] == "/ml/input/model/base/model.safetensors"


def test_file_binding_needs_a_local_cluster() -> None:
    with pytest.raises(RenderError, match="file:// binding") as err:
        render_run(load_run(SPECS / "bindings-file.run.yaml"))
    assert "--local-cluster" in (err.value.hint or "")


def test_oss_needs_credentials() -> None:
    with pytest.raises(RenderError, match="OSS credentials"):
        render_run(
            load_run(SPECS / "bindings-oss.run.yaml"), options=RenderOptions(oss_secret=None)
        )


def test_local_code_too_big_says_what_to_configure() -> None:
    with pytest.raises(RenderError, match="KiB") as err:
        render_run(
            load_run(SPECS / "pytorch.run.yaml"), options=RenderOptions(max_inline_code_bytes=10)
        )
    assert "--code-bucket" in (err.value.hint or "")


def test_run_env_cannot_shadow_kubedl_variables() -> None:
    run = load_run(SPECS / "pytorch.run.yaml")
    run = dataclasses.replace(run, env=type(run.env)({"PYTHONUNBUFFERED": "1"}))
    with pytest.raises(ContractError, match="set by KubeDL"):
        render_run(run)


def test_names_are_dns_1123() -> None:
    docs = render_run(load_run(SPECS / "tf.run.yaml"))
    label = r"[a-z]([-a-z0-9]*[a-z0-9])?"
    for d in docs:
        # a PV's name is a DNS subdomain: <namespace>.<claim> (trainstack.platformnames.pv_name)
        pattern = rf"{label}\.{label}" if d["kind"] == "PersistentVolume" else label
        assert re.fullmatch(pattern, d["metadata"]["name"])
