"""The platform program in kubeconfig mode (Pulumi.local.yaml), under mocks."""

from __future__ import annotations

import json
from typing import Any

import pulumi

PC = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
SC = "kubernetes:storage.k8s.io/v1:StorageClass"
CRDS = "kubernetes:yaml/v2:ConfigGroup"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SECRET = "kubernetes:core/v1:Secret"


def build_local(mocks: Any, **overrides: str) -> dict[str, Any]:
    mocks.use_env("local", **overrides)
    from trainstack.infra.platform.program import build, load_stack_config

    return mocks.run(lambda: build(load_stack_config()))  # type: ignore[no-any-return]


def test_creates_only_kubernetes_resources_through_one_provider(mocks: Any) -> None:
    build_local(mocks)
    providers = mocks.of_type("pulumi:providers:kubernetes")
    assert [p.name for p in providers] == ["k8s"]
    assert providers[0].inputs == {"context": "kind-trainstack"}
    assert not [r for r in mocks.resources if r.typ.startswith("alicloud:")]
    k8s_resources = [r for r in mocks.resources if r.typ.startswith("kubernetes:")]
    assert len(k8s_resources) == 22
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
    build_local(mocks, **{"kubedl:version": "v0.4.3", "kubedl:repo": "https://mirror.example/kubedl",
                          "kubedl:workloads": '["PyTorchJob", "TFJob"]'})
    crds = mocks.one(CRDS, "kubedl-crds")
    assert crds["files"] == [
        "https://mirror.example/kubedl/v0.4.3/config/crd/bases/training.kubedl.io_pytorchjobs.yaml",
        "https://mirror.example/kubedl/v0.4.3/config/crd/bases/training.kubedl.io_tfjobs.yaml",
    ]
    controller = mocks.one(DEPLOYMENT, "kubedl-controller")
    (container,) = controller["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "docker.io/kubedl/kubedl:0.4.3"
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
    namespaces = {r.inputs["metadata"]["name"]
                  for r in mocks.of_type("kubernetes:core/v1:Namespace")}
    assert namespaces == {"vision", "nlp", "kubedl-system"}
    quota = mocks.one("kubernetes:core/v1:ResourceQuota", "quota-vision")
    assert quota["metadata"]["namespace"] == "vision"
    assert quota["spec"]["hard"] == {"requests.cpu": "16", "requests.memory": "64Gi",
                                     "requests.nvidia.com/gpu": "0", "pods": "50"}


def test_pull_secret_in_every_team_namespace_is_secret(mocks: Any) -> None:
    from pulumi.runtime.rpc import is_rpc_secret, unwrap_rpc_secret

    build_local(mocks)
    secrets = {r.inputs["metadata"]["namespace"]: r.inputs for r in mocks.of_type(SECRET)}
    assert sorted(secrets) == ["nlp", "vision"]
    for secret in secrets.values():
        assert secret["metadata"]["name"] == "trainstack-registry"
        assert secret["type"] == "kubernetes.io/dockerconfigjson"
        # The engine receives the payload wrapped as a secret: it is encrypted in state.
        assert is_rpc_secret(secret["stringData"])
        payload = json.loads(unwrap_rpc_secret(secret["stringData"])[".dockerconfigjson"])
        auth = payload["auths"]["registry.example.com"]
        assert auth["username"] == "trainstack"
        assert auth["password"] == "plan-secret-placeholder"


def test_outputs_for_run_stacks(mocks: Any) -> None:
    from trainstack.infra.platform.program import build, load_stack_config

    mocks.use_env("local")

    @pulumi.runtime.test
    def check() -> pulumi.Output[None]:
        outputs = build(load_stack_config())

        def verify(args: list[Any]) -> None:
            namespaces, classes, storage, pull, version = args
            assert namespaces == {"vision": "vision", "nlp": "nlp"}
            assert classes[4] == "trainstack-priority-5"
            assert storage == {"local": "trainstack-local", "default": "trainstack-local"}
            assert pull == "trainstack-registry"
            assert version == "v0.5.0"

        return pulumi.Output.all(outputs["namespaces"], outputs["priorityClasses"],
                                 outputs["storageClasses"], outputs["pullSecretName"],
                                 outputs["kubedlVersion"]).apply(verify)

    check()
    outputs = mocks.run(lambda: build(load_stack_config()))
    value, secret = mocks.resolve(outputs["kubeconfig"])
    assert (value, secret) == ("", True), "the kubeconfig output is a secret even when empty"
