"""The platform program in kubeconfig mode (Pulumi.local.yaml), under mocks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pulumi
import pytest

from tests.infra.conftest import oss_key_of
from trainstack import platformnames as names

PC = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
SC = "kubernetes:storage.k8s.io/v1:StorageClass"
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SECRET = "kubernetes:core/v1:Secret"


def build_local(mocks: Any, **overrides: str) -> dict[str, Any]:
    mocks.use_env("local", **overrides)

    return mocks.build()  # type: ignore[no-any-return]


def test_creates_only_kubernetes_resources_through_one_provider(mocks: Any) -> None:
    build_local(mocks)
    providers = mocks.of_type("pulumi:providers:kubernetes")
    assert [p.name for p in providers] == ["k8s"]
    assert providers[0].inputs == {"context": "kind-trainstack"}
    assert not [r for r in mocks.resources if r.typ.startswith("alicloud:")]
    k8s_resources = [r for r in mocks.resources if r.typ.startswith("kubernetes:")]
    # 2 teams x (namespace, quota, limits, priority cap, network policy, pull secret, artifact
    # claim) + 9 priority classes + KubeDL (namespace, 5 CRDs, account, role, binding,
    # controller) + 1 class + team access (the PV ClusterRole, the admission namespace; per team
    # account, role, binding, PV binding, token, and the PV guard's admission policy, binding and
    # parameters) + per team the pod guard's policy and binding + the Service guard and its
    # binding + Kueue (namespace, 11 CRDs, account, role, binding, 2 webhook configurations,
    # config, certificate Secret, webhook Service, controller, the visibility API's Service,
    # binding and APIService, 1 flavor, per team a ClusterQueue and a LocalQueue) + the
    # finalizer releaser (account, role, binding, guard policy and binding, source, deployment).
    assert len(k8s_resources) == 14 + 9 + 10 + 1 + 2 + 2 * 8 + 2 * 2 + 2 + 24 + 1 + 2 * 2 + 7
    assert all(r.provider and "::k8s::" in r.provider for r in k8s_resources)


def test_priority_classes_1_to_9_match_the_renderer_naming(mocks: Any) -> None:
    build_local(mocks)
    classes = {r.inputs["metadata"]["name"]: r.inputs for r in mocks.of_type(PC)}
    assert sorted(classes) == [f"trainstack-priority-{n}" for n in range(1, 10)]
    assert classes["trainstack-priority-5"]["value"] == 5000.0  # numbers arrive as floats
    assert all(c["globalDefault"] is False for c in classes.values())
    values = [classes[f"trainstack-priority-{n}"]["value"] for n in range(1, 10)]
    assert values == sorted(values), "a higher run priority must be a higher class value"


def test_local_storage_class_uses_the_configured_provisioner(mocks: Any) -> None:
    build_local(mocks, **{"trainstack:localProvisioner": "example.com/hostpath"})
    (sc,) = mocks.of_type(SC)
    assert sc.inputs["metadata"]["name"] == "trainstack-local"
    assert sc.inputs["provisioner"] == "example.com/hostpath"
    assert sc.inputs["volumeBindingMode"] == "WaitForFirstConsumer"


def test_kubedl_crds_and_controller_are_pinned_to_the_configured_version(mocks: Any) -> None:
    build_local(mocks, **{"kubedl:workloads": '["PyTorchJob", "TFJob"]'})
    crds = {r.name: r.inputs for r in mocks.of_type(CRD) if r.name.startswith("crd-")}
    # One resource per enabled workload, read from the mirrored folder, sha256 from the lock.
    assert sorted(crds) == ["crd-pytorchjob", "crd-tfjob"]
    tf = crds["crd-tfjob"]
    assert tf["metadata"]["name"] == "tfjobs.training.kubedl.io"
    assert tf["spec"]["names"]["kind"] == "TFJob"
    assert len(tf["metadata"]["annotations"]["trainstack.dev/source-sha256"]) == 64
    controller = mocks.one(DEPLOYMENT, "kubedl-controller")
    (container,) = controller["spec"]["template"]["spec"]["containers"]
    # KubeDL v0.5.0's own manifests deploy 0.4.2; kubeconfig mode may pull it from Docker Hub.
    assert container["image"] == "docker.io/kubedl/kubedl:0.4.2"
    assert {"name": "WORKLOADS_ENABLE", "value": "PyTorchJob,TFJob"} in container["env"]
    assert not any(a.startswith("--gang-scheduler-name") for a in container["args"])
    assert controller["metadata"]["namespace"] == "kubedl-system"


def test_gang_scheduler_flag_reaches_the_controller(mocks: Any) -> None:
    build_local(mocks, **{"kubedl:gangScheduler": "volcano"})
    controller = mocks.one(DEPLOYMENT, "kubedl-controller")
    (container,) = controller["spec"]["template"]["spec"]["containers"]
    assert "--gang-scheduler-name=volcano" in container["args"]


def test_one_namespace_and_quota_per_team(mocks: Any) -> None:
    build_local(mocks)
    namespaces = {
        r.inputs["metadata"]["name"] for r in mocks.of_type("kubernetes:core/v1:Namespace")
    }
    assert namespaces == {
        "vision",
        "nlp",
        "kubedl-system",
        "kueue-system",
        names.ADMISSION_NAMESPACE,
    }
    quota = mocks.one("kubernetes:core/v1:ResourceQuota", "quota-vision")
    assert quota["metadata"]["namespace"] == "vision"
    assert quota["spec"]["hard"] == {
        **quota["spec"]["hard"],  # storage, Service types, objects: tests/infra/test_tenancy.py
        # Kueue's ceiling (queues.py): its own 16 and 64Gi, and all that nlp may lend
        "requests.cpu": "32",
        "requests.memory": "128Gi",
        "requests.nvidia.com/gpu": "0",
        "pods": "50",
    }


def test_pull_secret_in_every_team_namespace_is_secret(mocks: Any) -> None:
    from pulumi.runtime.rpc import is_rpc_secret, unwrap_rpc_secret

    build_local(mocks)
    secrets = {
        r.inputs["metadata"]["namespace"]: r.inputs
        for r in mocks.of_type(SECRET)
        if r.inputs["metadata"]["name"] == "trainstack-registry"
    }
    assert sorted(secrets) == ["nlp", "vision"]
    for secret in secrets.values():
        assert secret["metadata"]["name"] == "trainstack-registry"
        assert secret["type"] == "kubernetes.io/dockerconfigjson"
        # The engine receives the payload wrapped as a secret: it is encrypted in state.
        assert is_rpc_secret(secret["stringData"])
        payload = json.loads(unwrap_rpc_secret(secret["stringData"])[".dockerconfigjson"])
        auth = payload["auths"]["registry.example.com"]
        assert auth["username"] == "trainstack"
        assert auth["password"] == "s3cret-registry-password"


def test_outputs_for_run_stacks(mocks: Any) -> None:
    from trainstack.infra.platform.program import build, load_stack_config

    mocks.use_env("local")

    @pulumi.runtime.test
    def check() -> pulumi.Output[None]:
        outputs = build(load_stack_config(root=mocks.root))

        def verify(args: list[Any]) -> None:
            namespaces, classes, storage, pull, version = args
            assert namespaces == {"vision": "vision", "nlp": "nlp"}
            assert classes[4] == "trainstack-priority-5"
            assert storage == {"local": "trainstack-local", "default": "trainstack-local"}
            assert pull == "trainstack-registry"
            assert version == "v0.5.0"

        return pulumi.Output.all(
            outputs["namespaces"],
            outputs["priorityClasses"],
            outputs["storageClasses"],
            outputs["pullSecretName"],
            outputs["kubedlVersion"],
        ).apply(verify)

    check()
    outputs = mocks.build()
    value, secret = mocks.resolve(outputs["kubeconfig"])
    assert (value, secret) == ("", True), "the kubeconfig output is a secret even when empty"


# --- OSS: each team's AccessKey Secret, which the renderer's OSS volumes name ---------------------

RUN_FILE = Path(__file__).resolve().parents[2] / "components/mnist-ddp/runs/baseline.yaml"


def build_local_with_oss(mocks: Any, *teams: str) -> dict[str, Any]:
    """Pulumi.local.yaml plus an AccessKey per team (default: both), set as secrets."""
    mocks.use_team_keys("local", *(teams or ("vision", "nlp")))

    return mocks.build()  # type: ignore[no-any-return]


def settled(mocks: Any, outputs: dict[str, Any]) -> dict[str, Any]:
    """The outputs as a StackReference sees them without --show-secrets."""
    result = {}
    for key, output in outputs.items():
        value, secret = mocks.resolve(output)
        result[key] = "[secret]" if secret else value
    return result


def oss_secrets(mocks: Any) -> list[Any]:
    return [r for r in mocks.of_type(SECRET) if r.inputs["metadata"]["name"] == "trainstack-oss"]


def test_no_oss_secret_unless_an_access_key_is_configured(mocks: Any) -> None:
    outputs = settled(mocks, build_local(mocks))
    assert oss_secrets(mocks) == []
    assert outputs["ossAuth"] == {"type": "none"}


def test_each_team_key_becomes_a_secret_in_its_own_namespace(mocks: Any) -> None:
    from pulumi.runtime.rpc import is_rpc_secret, unwrap_rpc_secret

    outputs = settled(mocks, build_local_with_oss(mocks))
    secrets = {r.inputs["metadata"]["namespace"]: r for r in oss_secrets(mocks)}
    assert sorted(secrets) == ["nlp", "vision"]
    for team, secret in secrets.items():
        assert secret.inputs["type"] == "Opaque"
        # Encrypted in state, [secret] in every preview: the engine gets it wrapped as a secret.
        assert is_rpc_secret(secret.inputs["stringData"])
        key = oss_key_of(team)
        assert unwrap_rpc_secret(secret.inputs["stringData"]) == {
            "akId": key["id"],
            "akSecret": key["secret"],
        }
        assert secret.provider is not None and "::k8s::" in secret.provider
    assert outputs["ossAuth"] == {
        "type": "secret",
        "secretName": "trainstack-oss",
        "teams": ["nlp", "vision"],
    }
    # Names only leave the platform; no AccessKey is in an output or any other resource.
    others = [r.inputs for r in mocks.resources if r not in oss_secrets(mocks)]
    for text in (json.dumps(outputs), json.dumps(others, default=str)):
        for team in ("vision", "nlp"):
            assert not any(value in text for value in oss_key_of(team).values())


def test_rendered_oss_volumes_name_the_secret_the_platform_created(mocks: Any) -> None:
    from trainstack.infra.run.options import render_options
    from trainstack.render import dump_yaml, render_run
    from trainstack.spec import load_run

    outputs = settled(mocks, build_local_with_oss(mocks))
    created = {
        (r.inputs["metadata"]["name"], r.inputs["metadata"]["namespace"])
        for r in oss_secrets(mocks)
    }
    run = load_run(RUN_FILE)  # oss:// input and outputs, team vision
    manifests = render_run(run, options=render_options(outputs, run, "local"))
    volumes = [m for m in manifests if m["kind"] == "PersistentVolume"]
    assert len(volumes) == 3
    for volume in volumes:
        csi = volume["spec"]["csi"]
        ref = csi["nodePublishSecretRef"]
        assert ref == {"name": "trainstack-oss", "namespace": "vision"}
        assert (ref["name"], ref["namespace"]) in created, "the Secret the volume names exists"
        assert "authType" not in csi["volumeAttributes"]
    text = dump_yaml(manifests)
    for team in ("vision", "nlp"):
        assert not any(value in text for value in oss_key_of(team).values())


def test_without_an_access_key_an_oss_run_says_what_to_set(mocks: Any) -> None:
    from trainstack.infra.run.options import render_options
    from trainstack.render import RenderError, render_run
    from trainstack.spec import load_run

    outputs = settled(mocks, build_local(mocks))
    run = load_run(RUN_FILE)
    with pytest.raises(RenderError) as caught:
        render_run(run, options=render_options(outputs, run, "local"))
    assert (
        "oss://acme-trainstack-dev-data/vision/mnist/ needs OSS credentials" in caught.value.message
    )
    hint = caught.value.hint or ""
    assert "team 'vision' of environment 'local' has no OSS credentials" in hint
    assert (
        "pulumi config set --secret --path 'trainstack:ossAccessKeys.vision.id' <id> "
        "--stack local" in hint
    )
    assert "teamOssPolicies" in hint
    assert "pulumi up --stack local" in hint
