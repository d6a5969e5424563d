"""The platform program in ack mode (Pulumi.ack-dev.yaml), under mocks: cloud and cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pulumi
import pytest

POOL = "alicloud:cs/nodePool:NodePool"
SC = "kubernetes:storage.k8s.io/v1:StorageClass"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def build_ack(mocks: Any, **overrides: str) -> dict[str, Any]:
    mocks.use_env("ack-dev", **overrides)

    return mocks.build()  # type: ignore[no-any-return]


def labels(pool: dict[str, Any]) -> dict[str, str]:
    return {item["key"]: item["value"] for item in pool["labels"]}


def test_region_is_pinned_on_an_explicit_provider(mocks: Any) -> None:
    build_ack(mocks)
    (provider,) = mocks.of_type("pulumi:providers:alicloud")
    assert provider.inputs["region"] == "cn-hangzhou"
    cloud = [r for r in mocks.resources if r.typ.startswith("alicloud:")]
    assert cloud and all(r.provider and "::alicloud::" in r.provider for r in cloud)


def test_network_and_managed_cluster(mocks: Any) -> None:
    build_ack(mocks)
    vpc = mocks.one("alicloud:vpc/network:Network", "vpc")
    assert vpc["cidrBlock"] == "10.0.0.0/8"
    switches = {r.inputs["zoneId"]: r.inputs for r in mocks.of_type("alicloud:vpc/switch:Switch")}
    assert sorted(switches) == ["cn-hangzhou-h", "cn-hangzhou-i"]
    assert switches["cn-hangzhou-h"]["vpcId"] == "vpc-id"
    cluster = mocks.one("alicloud:cs/managedKubernetes:ManagedKubernetes", "cluster")
    assert cluster["name"] == "trainstack-test"
    assert cluster["vswitchIds"] == ["vsw-cn-hangzhou-h-id", "vsw-cn-hangzhou-i-id"]
    addons = {a["name"] for a in cluster["addons"]}
    assert {"csi-plugin", "csi-provisioner"} <= addons


def test_gpu_pools_are_tainted_labelled_and_autoscaled(mocks: Any) -> None:
    build_ack(mocks)
    pools = {r.inputs["nodePoolName"]: r.inputs for r in mocks.of_type(POOL)}
    assert sorted(pools) == ["a10", "cpu", "spot", "system", "v100"]
    for name in ("a10", "v100"):
        assert pools[name]["taints"] == [GPU_TAINT], name
    for name in ("a10", "v100", "spot"):
        assert labels(pools[name])["trainstack.dev/accelerator"] == "gpu"
        assert pools[name]["clusterId"] == "cluster-id"
    assert labels(pools["a10"])["trainstack.dev/gpu-type"] == "A10"
    assert pools["a10"]["instanceTypes"] == ["ecs.gn7i-c8g1.2xlarge"]
    assert pools["a10"]["scalingConfig"] == {
        "enable": True,
        "minSize": 0.0,
        "maxSize": 4.0,
        "type": "gpu",
    }
    assert "desiredSize" not in pools["a10"], "autoscaled pools leave the size to the autoscaler"
    # The CPU pool takes everything else: no taint.
    assert pools["cpu"].get("taints", []) == []
    assert pools["cpu"]["scalingConfig"]["minSize"] == 0.0


def test_spot_pool_bids_with_a_price_limit(mocks: Any) -> None:
    build_ack(mocks)
    spot = mocks.one(POOL, "pool-spot")
    assert spot["spotStrategy"] == "SpotWithPriceLimit"
    assert spot["spotPriceLimits"] == [
        {"instanceType": "ecs.gn7i-c8g1.2xlarge", "priceLimit": "5.0"}
    ]
    assert labels(spot)["trainstack.dev/capacity"] == "spot"
    # GPU nodes, and preemptible: only runs that tolerate both land there.
    assert spot["taints"] == [
        GPU_TAINT,
        {"key": "trainstack.dev/capacity", "value": "spot", "effect": "NoSchedule"},
    ]
    assert "spotStrategy" not in mocks.one(POOL, "pool-a10")


def test_no_spot_pool_unless_configured(mocks: Any) -> None:
    values = mocks.use_env("ack-dev")
    del values["trainstack:spotPool"]
    mocks.configure(values, ["trainstack:registryPassword"])

    mocks.build()
    assert sorted(r.name for r in mocks.of_type(POOL)) == [
        "pool-a10",
        "pool-cpu",
        "pool-system",
        "pool-v100",
    ]


def test_storage_classes_use_alibaba_csi_provisioners(mocks: Any) -> None:
    build_ack(mocks)
    classes = {r.inputs["metadata"]["name"]: r.inputs for r in mocks.of_type(SC)}
    assert {n: c["provisioner"] for n, c in classes.items()} == {
        "trainstack-disk": "diskplugin.csi.alibabacloud.com",
        "trainstack-nas": "nasplugin.csi.alibabacloud.com",
        "trainstack-oss": "ossplugin.csi.alibabacloud.com",
    }
    assert (
        classes["trainstack-nas"]["parameters"]["server"]
        == "0a1b2c-xyz.cn-hangzhou.nas.aliyuncs.com:/trainstack/"
    )
    assert classes["trainstack-oss"]["parameters"]["bucket"] == "acme-trainstack-dev-data"
    assert classes["trainstack-oss"]["parameters"]["url"] == "oss-cn-hangzhou-internal.aliyuncs.com"


def test_nas_buckets_registry_and_jobs_role(mocks: Any) -> None:
    build_ack(mocks)
    mount = mocks.one("alicloud:nas/mountTarget:MountTarget", "nas-mount")
    assert mount["fileSystemId"] == "nas-id"
    buckets = sorted(r.inputs["bucket"] for r in mocks.of_type("alicloud:oss/bucket:Bucket"))
    purposes = ("artifacts", "checkpoints", "code", "data", "models")
    assert buckets == [f"acme-trainstack-dev-{p}" for p in purposes]
    namespace = "alicloud:cs/registryEnterpriseNamespace:RegistryEnterpriseNamespace"
    assert mocks.one(namespace, "acr-namespace")["name"] == "acme"
    repos = sorted(
        r.inputs["name"]
        for r in mocks.of_type("alicloud:cs/registryEnterpriseRepo:RegistryEnterpriseRepo")
    )
    assert repos == ["horovod", "kubedl", "python", "tensorflow", "torch", "xgboost"]
    role = mocks.one("alicloud:ram/role:Role", "jobs-role")
    assert role["roleName"] == "trainstack-test-jobs"
    trust = json.loads(role["assumeRolePolicyDocument"])
    principals = [s["Principal"] for s in trust["Statement"]]
    # Only the cluster's RRSA OIDC provider (the OSS CSI driver's service account): no ECS
    # principal, so the role can never become a node-wide credential.
    assert principals == [{"Federated": ["acs:ram::1234567890:oidc-provider/ack-rrsa-c0ffee"]}]
    assert trust["Statement"][0]["Condition"]["StringEquals"] == {
        "oidc:aud": "sts.aliyuncs.com",
        "oidc:iss": "https://oidc-ack-cn-hangzhou.oss-cn-hangzhou.aliyuncs.com/c0ffee",
        "oidc:sub": "system:serviceaccount:ack-csi-fuse:csi-fuse-ossfs",
    }
    # The StorageClass's role: the data bucket, where the provisioner picks every path.
    policy = json.loads(
        mocks.one("alicloud:ram/policy:Policy", "jobs-oss-policy")["policyDocument"]
    )
    assert policy["Statement"][0]["Resource"] == ["acs:oss:*:*:acme-trainstack-dev-data/*"]
    # Each team's role: its own prefix of every platform bucket, multipart writes included.
    for team in ("nlp", "vision"):
        role = mocks.one("alicloud:ram/role:Role", f"team-role-{team}")
        assert role["roleName"] == f"trainstack-test-jobs-{team}"
        assert json.loads(role["assumeRolePolicyDocument"]) == trust
        doc = json.loads(
            mocks.one("alicloud:ram/policy:Policy", f"team-role-{team}-oss-policy")[
                "policyDocument"
            ]
        )
        objects, listing, info = doc["Statement"]
        # GetBucketInfo carries no prefix: under the listing's oss:Prefix condition it would
        # be denied, so it is a statement of its own
        assert info["Action"] == ["oss:GetBucketInfo"] and "Condition" not in info
        assert sorted(objects["Resource"]) == [
            f"acs:oss:*:*:acme-trainstack-dev-{p}/{team}/*" for p in purposes
        ]
        assert {"oss:AbortMultipartUpload", "oss:ListParts"} <= set(objects["Action"])
        assert listing["Condition"] == {"StringLike": {"oss:Prefix": [f"{team}/", f"{team}/*"]}}


def test_kubeconfig_comes_from_the_cluster_credential_as_a_secret(mocks: Any) -> None:
    from trainstack.infra.platform.program import build, load_stack_config

    mocks.use_env("ack-dev")

    @pulumi.runtime.test
    def check() -> pulumi.Output[None]:
        outputs = build(load_stack_config(root=mocks.root))

        def verify(args: list[Any]) -> None:
            kubeconfig, registry, region = args
            assert kubeconfig.startswith("apiVersion: v1")
            assert registry == "trainstack-test-registry-vpc.cn-hangzhou.cr.aliyuncs.com"
            assert region == "cn-hangzhou"

        return pulumi.Output.all(
            outputs["kubeconfig"], outputs["registry"], outputs["region"]
        ).apply(verify)

    check()
    (call,) = [
        c for c in mocks.calls if c.token == "alicloud:cs/getClusterCredential:getClusterCredential"
    ]
    assert call.args["clusterId"] == "cluster-id"
    from pulumi.runtime.rpc import is_rpc_secret

    (provider,) = mocks.of_type("pulumi:providers:kubernetes")
    assert is_rpc_secret(provider.inputs["kubeconfig"]), "the admin kubeconfig is never plain"


def test_controller_gets_the_gang_scheduler_and_stays_off_gpu_nodes(mocks: Any) -> None:
    build_ack(mocks)
    # No toleration for the GPU taint: the controller never takes a GPU node; it may run on the
    # system pool (CriticalAddonsOnly), platform software as it is.
    controller = mocks.one("kubernetes:apps/v1:Deployment", "kubedl-controller")
    (container,) = controller["spec"]["template"]["spec"]["containers"]
    assert "--gang-scheduler-name=kube-coscheduler" in container["args"]
    assert controller["spec"]["template"]["spec"]["tolerations"] == [
        {"key": "CriticalAddonsOnly", "operator": "Exists"}
    ]


# --- OSS: one scheme, RRSA with the jobs role, on both sides ------------------------------------

RUN_FILE = Path(__file__).resolve().parents[2] / "components/mnist-ddp/runs/baseline.yaml"


def settled(mocks: Any, outputs: dict[str, Any]) -> dict[str, Any]:
    """The outputs as a StackReference sees them without --show-secrets."""
    result = {}
    for key, output in outputs.items():
        value, secret = mocks.resolve(output)
        result[key] = "[secret]" if secret else value
    return result


def test_node_pools_carry_no_jobs_role_and_no_oss_secret_exists(mocks: Any) -> None:
    build_ack(mocks)
    pools = mocks.of_type(POOL)
    assert pools and all("ramRoleName" not in p.inputs for p in pools), (
        "nodes keep ACK's worker role; the jobs role is reached through RRSA only"
    )
    secrets = {r.inputs["metadata"]["name"] for r in mocks.of_type("kubernetes:core/v1:Secret")}
    # no OSS AccessKey, and no registry password: pods pull with the credential helper's tokens
    assert secrets == {"trainstack-runner-token"}


def test_rendered_oss_volumes_use_the_role_and_scheme_of_the_storage_class(mocks: Any) -> None:
    from trainstack.infra.run.options import render_options
    from trainstack.render import render_run
    from trainstack.spec import load_run

    outputs = settled(mocks, build_ack(mocks))
    role = mocks.one("alicloud:ram/role:Role", "jobs-role")["roleName"]
    teams = {
        t: mocks.one("alicloud:ram/role:Role", f"team-role-{t}")["roleName"]
        for t in ("nlp", "vision")
    }
    assert outputs["ossAuth"] == {"type": "rrsa", "roleName": role, "teamRoles": teams}
    storage_class = mocks.one(SC, "sc-oss")["parameters"]
    assert (storage_class["authType"], storage_class["roleName"]) == ("rrsa", role)
    role = teams["vision"]  # the run's team: its static PVs mount with its own role
    run = load_run(RUN_FILE)
    manifests = render_run(run, options=render_options(outputs, run, "ack-dev"))
    volumes = [m for m in manifests if m["kind"] == "PersistentVolume"]
    assert len(volumes) == 3
    for volume in volumes:
        csi = volume["spec"]["csi"]
        attributes = csi["volumeAttributes"]
        assert (attributes["authType"], attributes["roleName"]) == ("rrsa", role)
        assert attributes["url"] == storage_class["url"] == "oss-cn-hangzhou-internal.aliyuncs.com"
        assert "nodePublishSecretRef" not in csi, "no AccessKey Secret exists on ack"


def test_a_cluster_without_rrsa_gets_no_trust_policy() -> None:
    from trainstack.infra.platform.iam import trust_policy

    with pytest.raises(ValueError, match="no RRSA OIDC provider"):
        trust_policy(None)
