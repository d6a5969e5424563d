"""Every rule with a resource it passes and one it flags (field, found, fix named)."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from trainstack.platformnames import PLATFORM_PROJECT, RUNS_PROJECT
from trainstack.policy.check import evaluate
from trainstack.policy.model import (
    ContainerDefaults,
    Context,
    Level,
    NodePool,
    Resource,
    TeamQuota,
    Violation,
)
from trainstack.policy.rules import RULES
from trainstack.policy.settings import RuleSetting, settings

GIB = 2.0**30
REGISTRY = "reg-vpc.cn-hangzhou.cr.aliyuncs.com"
GPU_POOL = NodePool(
    "a10",
    {
        "trainstack.dev/pool": "a10",
        "trainstack.dev/accelerator": "gpu",
        "trainstack.dev/capacity": "on-demand",
    },
    (("nvidia.com/gpu", "present", "NoSchedule"),),
    8,
    30 * GIB,
    1,
)
CPU_POOL = NodePool(
    "cpu",
    {"trainstack.dev/pool": "cpu", "trainstack.dev/capacity": "on-demand"},
    (),
    8,
    32 * GIB,
    0,
)
ACK = Context(
    env="ack-dev",
    mode="ack",
    region="cn-hangzhou",
    registry=REGISTRY,
    buckets=("acme-dev-data", "acme-dev-models"),
    nas_server="abc.nas.aliyuncs.com",
    node_pools=(GPU_POOL, CPU_POOL),
    namespaces={"vision": "vision"},
    team_max_priority={"vision": 5},
    quotas={"vision": TeamQuota(cpu=16, memory=64 * GIB, gpus=2)},
)
LOCAL = Context(
    env="local", mode="kubeconfig", registry="registry.example.com", namespaces={"vision": "vision"}
)

CONTAINER: dict[str, Any] = {
    "name": "pytorch",
    "image": f"{REGISTRY}/acme/torch:2.3",
    "resources": {"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"nvidia.com/gpu": 1}},
    "env": [
        {"name": "NCCL_DEBUG", "value": "INFO"},
        {"name": "WANDB_API_KEY", "valueFrom": {"secretKeyRef": {"name": "w", "key": "k"}}},
    ],
}
POD: dict[str, Any] = {
    "containers": [CONTAINER],
    "priorityClassName": "trainstack-priority-5",
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "trainstack.dev/capacity",
                                "operator": "NotIn",
                                "values": ["spot"],
                            }
                        ]
                    }
                ]
            }
        }
    },
}
JOB: dict[str, Any] = {
    "apiVersion": "training.kubedl.io/v1alpha1",
    "kind": "PyTorchJob",
    "metadata": {"name": "mnist", "namespace": "vision"},
    "spec": {
        "pytorchReplicaSpecs": {
            role: {"replicas": 1, "template": {"spec": copy.deepcopy(POD)}}
            for role in ("Master", "Worker")
        }
    },
}
JOB_TYPE = "kubernetes:training.kubedl.io/v1alpha1:PyTorchJob"
PV_TYPE = "kubernetes:core/v1:PersistentVolume"


def job(edit: Any = None) -> Resource:
    props = copy.deepcopy(JOB)
    if edit is not None:
        edit(props)
    return Resource(JOB_TYPE, "pytorchjob-mnist", props, project=RUNS_PROJECT)


def pod_of(props: dict[str, Any], role: str = "Worker") -> dict[str, Any]:
    spec: dict[str, Any] = props["spec"]["pytorchReplicaSpecs"][role]["template"]["spec"]
    return spec


def pv(driver: str, **attrs: str) -> Resource:
    return Resource(
        PV_TYPE,
        "pv-in",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "spec": {"csi": {"driver": driver, "volumeAttributes": attrs}},
        },
        project=RUNS_PROJECT,
    )


def run_rule(
    rule_id: str, resource: Resource, ctx: Context = ACK, **config: Any
) -> list[Violation]:
    rule = next(r for r in RULES if r.id == rule_id)
    return list(
        evaluate([resource], ctx, [RuleSetting(rule, rule.level, {**rule.defaults, **config})])
    )


def one(found: list[Violation], field_end: str, words: str) -> Violation:
    assert len(found) == 1, found
    v = found[0]
    assert v.field.endswith(field_end), v.field
    assert words in v.found, v.found
    assert v.fix
    return v


def test_every_rule_has_an_id_description_level_and_passes_the_good_job() -> None:
    assert len({r.id for r in RULES}) == len(RULES) == 15
    for rule in RULES:
        assert rule.description and rule.level in (Level.ADVISORY, Level.MANDATORY)
    assert evaluate([job()], ACK, settings({}, "x")) == ()


# --- allowed-registries -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "image, words",
    [
        ("pytorch/pytorch:2.3.0", "Docker Hub"),
        ("docker.io/library/python:3.11", "Docker Hub"),
        ("ghcr.io/acme/torch:2.3", "not in an allowed registry"),
    ],
)
def test_allowed_registries_flags_foreign_images(image: str, words: str) -> None:
    def edit(p: dict[str, Any]) -> None:
        pod_of(p, "Master")["containers"][0]["image"] = image

    v = one(
        run_rule("allowed-registries", job(edit)), "Master.template.spec.containers[0].image", words
    )
    assert v.rule == "allowed-registries" and v.resource == f"{JOB_TYPE}::pytorchjob-mnist"


def test_allowed_registries_flags_latest_and_accepts_digests_and_listed_registries() -> None:
    def latest(p: dict[str, Any]) -> None:
        pod_of(p)["containers"] = [{**CONTAINER, "image": f"{REGISTRY}/acme/torch"}]

    one(run_rule("allowed-registries", job(latest)), "containers[0].image", "latest")

    def listed(p: dict[str, Any]) -> None:
        for role in ("Master", "Worker"):
            pod_of(p, role)["containers"] = [{**CONTAINER, "image": "docker.io/kubedl/x@sha256:0"}]

    assert run_rule("allowed-registries", job(listed), registries=["docker.io/kubedl"]) == []
    assert run_rule("allowed-registries", job(listed)) != []


@pytest.mark.parametrize(
    ("image", "admitted"),
    [
        ("docker.io/library/python:3.13-alpine", True),
        ("docker.io/library/python@sha256:" + "3" * 64, True),
        ("docker.io/library/python-evil:1", False),
        ("docker.io/library/ubuntu:24.04", False),
        ("docker.io/library/python/sub:1", True),  # a path under it, as for any entry
    ],
)
def test_a_listed_repository_admits_its_tags_and_digests_and_nothing_beside_it(
    image: str, admitted: bool
) -> None:
    def with_image(p: dict[str, Any]) -> None:
        for role in ("Master", "Worker"):
            pod_of(p, role)["containers"] = [{**CONTAINER, "image": image}]

    found = run_rule("allowed-registries", job(with_image), registries=["docker.io/library/python"])
    assert (found == []) is admitted, found

    # a bare registry host stays a host: another port is another registry
    def other_port(p: dict[str, Any]) -> None:
        for role in ("Master", "Worker"):
            pod_of(p, role)["containers"] = [{**CONTAINER, "image": f"{REGISTRY}:5000/a/t:1"}]

    assert run_rule(
        "allowed-registries", job(other_port), registries=[REGISTRY], platformRegistry=False
    )


# --- pod-fits-node-pool -------------------------------------------------------------------------


def test_an_oversized_pod_fits_no_pool_and_each_pool_says_why() -> None:
    def big(p: dict[str, Any]) -> None:
        pod_of(p)["containers"] = [
            {
                **CONTAINER,
                "resources": {
                    "requests": {"cpu": "16", "memory": "64Gi"},
                    "limits": {"nvidia.com/gpu": 1},
                },
            }
        ]

    v = one(run_rule("pod-fits-node-pool", job(big)), "Worker.template.spec", "fits no node pool")
    assert "a10: cpu 16 > 6.8" in v.found and "cpu: cpu 16 > 6.8" in v.found  # 8 vCPUs less 15%


def test_a_gpu_pod_without_the_toleration_fits_no_pool() -> None:
    def untolerated(p: dict[str, Any]) -> None:
        pod_of(p)["tolerations"] = []

    v = one(run_rule("pod-fits-node-pool", job(untolerated)), "Worker.template.spec", "gpus=1")
    assert "taint nvidia.com/gpu not tolerated" in v.found


def test_headroom_is_configurable_and_unknown_platforms_are_not_judged() -> None:
    def seven(p: dict[str, Any]) -> None:
        pod_of(p)["containers"] = [
            {
                **CONTAINER,
                "resources": {
                    "requests": {"cpu": "7.5", "memory": "8Gi"},
                    "limits": {"nvidia.com/gpu": 1},
                },
            }
        ]

    assert run_rule("pod-fits-node-pool", job(seven)) != []
    assert run_rule("pod-fits-node-pool", job(seven), headroom=0.05) == []
    assert run_rule("pod-fits-node-pool", job(seven), LOCAL) == []  # no nodePools exported


# --- platform-storage ---------------------------------------------------------------------------


def test_only_the_platforms_buckets_and_nas() -> None:
    oss = "ossplugin.csi.alibabacloud.com"
    assert run_rule("platform-storage", pv(oss, bucket="acme-dev-data")) == []
    one(
        run_rule("platform-storage", pv(oss, bucket="someone-elses")),
        "volumeAttributes.bucket",
        "'someone-elses' is not one of the platform's buckets",
    )
    assert run_rule("platform-storage", pv(oss, bucket="shared"), buckets=["shared"]) == []
    nas = "nasplugin.csi.alibabacloud.com"
    assert run_rule("platform-storage", pv(nas, server="abc.nas.aliyuncs.com")) == []
    one(
        run_rule("platform-storage", pv(nas, server="other.nas.aliyuncs.com")),
        "volumeAttributes.server",
        "not the platform's file system",
    )


# --- no-host-access -----------------------------------------------------------------------------


def test_host_access_is_flagged_on_the_cloud_and_allowed_on_a_local_cluster() -> None:
    def host(p: dict[str, Any]) -> None:
        pod = pod_of(p)
        pod["hostNetwork"] = True
        pod["volumes"] = [{"name": "h", "hostPath": {"path": "/var/run"}}]
        pod["containers"] = [{**CONTAINER, "securityContext": {"privileged": True}}]

    found = run_rule("no-host-access", job(host))
    assert sorted(v.field.rsplit(".", 1)[-1] for v in found) == [
        "hostNetwork",
        "hostPath",
        "privileged",
    ]
    # a kind cluster whose platform admits host paths (hostPathVolumes: Pod Security privileged)
    kind = dataclasses.replace(LOCAL, host_path_volumes=True)
    assert run_rule("no-host-access", job(host), kind) == []
    assert len(run_rule("no-host-access", job(host), kind, allowOnLocal=False)) == 3
    # a shared cluster reached by kubeconfig: its namespaces enforce baseline, so flag it here
    assert len(run_rule("no-host-access", job(host), LOCAL)) == 3
    assert run_rule("no-host-access", job()) == []


# --- team-quota ---------------------------------------------------------------------------------


def test_all_replicas_together_within_the_team_quota() -> None:
    def many(p: dict[str, Any]) -> None:
        p["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3

    v = one(run_rule("team-quota", job(many)), "spec", "gpus 4 > 2")
    assert "cpu=16" in v.found and "Pulumi.ack-dev.yaml" in v.fix
    assert run_rule("team-quota", job()) == []
    # the quota's pod count too: no other fit check counts pods
    two_pods = dataclasses.replace(
        ACK, quotas={"vision": TeamQuota(cpu=64, memory=256 * GIB, gpus=8, pods=2)}
    )

    def four(p: dict[str, Any]) -> None:
        p["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3

    one(run_rule("team-quota", job(four), two_pods), "spec", "pods 4 > 2")
    assert run_rule("team-quota", job(), two_pods) == []


def storage_quota() -> Context:
    return dataclasses.replace(
        ACK,
        quotas={
            "vision": TeamQuota(
                cpu=64,
                memory=256 * GIB,
                gpus=8,
                storage=100 * GIB,
                claims=10,
                ephemeral_storage=10 * GIB,
                limit_ephemeral_storage=40 * GIB,
            )
        },
        team_defaults={"vision": ContainerDefaults(0.5, GIB, 2, 4 * GIB, 1 * GIB, 20 * GIB)},
    )


def claim(size: str) -> Resource:
    props = {
        "metadata": {"name": "in-data", "namespace": "vision"},
        "spec": {"volumeName": "vision.in-data", "resources": {"requests": {"storage": size}}},
    }
    return Resource("kubernetes:core/v1:PersistentVolumeClaim", "in-data", props)


def test_a_claim_fits_the_team_storage_and_claim_quota() -> None:
    quota = storage_quota()
    assert run_rule("team-quota", claim("20Gi"), quota) == []
    one(run_rule("team-quota", claim("200Gi"), quota), "requests.storage", "over team")
    none = dataclasses.replace(
        quota,
        quotas={"vision": dataclasses.replace(quota.quotas["vision"], claims=0)},
    )
    one(run_rule("team-quota", claim("1Gi"), none), "spec", "admits no claims")


def test_ephemeral_storage_counts_containers_at_their_limit_range_defaults() -> None:
    quota = storage_quota()
    # two pods, one container each, none stating ephemeral storage: 2 x 1Gi requested and
    # 2 x 20Gi limited, within 10Gi / 40Gi
    assert run_rule("team-quota", job(), quota) == []

    def three(p: dict[str, Any]) -> None:
        p["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 2

    one(run_rule("team-quota", job(three), quota), "spec", "ephemeral-storage limits")

    def big(p: dict[str, Any]) -> None:
        pod_of(p)["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "10Gi"

    one(run_rule("team-quota", job(big), quota), "spec", "ephemeral-storage requests")


# --- priority-cap -------------------------------------------------------------------------------


def test_priority_above_the_team_cap() -> None:
    def nine(p: dict[str, Any]) -> None:
        pod_of(p)["priorityClassName"] = "trainstack-priority-9"

    one(run_rule("priority-cap", job(nine)), "priorityClassName", "priority 9 is above team")
    assert run_rule("priority-cap", job(nine), maxPriority={"vision": 9}) == []
    assert run_rule("priority-cap", job()) == []


@pytest.mark.parametrize("system", ["system-node-critical", "system-cluster-critical"])
def test_kubernetes_system_priorities_are_above_every_team_cap(system: str) -> None:
    def critical(p: dict[str, Any]) -> None:
        pod_of(p)["priorityClassName"] = system

    one(run_rule("priority-cap", job(critical)), "priorityClassName", f"{system} is Kubernetes'")
    one(
        run_rule("priority-cap", job(critical), maxPriority={"vision": 9}),
        "priorityClassName",
        "above every team",
    )


# --- secret-refs --------------------------------------------------------------------------------


def test_a_secret_as_a_literal_env_value() -> None:
    def literal(p: dict[str, Any]) -> None:
        pod_of(p)["containers"] = [
            {**CONTAINER, "env": [{"name": "AWS_SECRET_ACCESS_KEY", "value": "abc"}]}
        ]

    one(
        run_rule("secret-refs", job(literal)),
        "env[0]",
        "AWS_SECRET_ACCESS_KEY is set as a literal value",
    )
    assert run_rule("secret-refs", job()) == []


# --- stateful-protected -------------------------------------------------------------------------


def test_stateful_platform_resources_are_protected() -> None:
    bucket = Resource(
        "alicloud:oss/bucket:Bucket", "bucket-data", {}, protect=False, project=PLATFORM_PROJECT
    )
    one(run_rule("stateful-protected", bucket), "options.protect", "without protect")
    assert (
        run_rule(
            "stateful-protected",
            Resource(bucket.type, bucket.name, {}, protect=True, project=PLATFORM_PROJECT),
        )
        == []
    )
    claim = Resource("kubernetes:core/v1:PersistentVolumeClaim", "pvc", {}, project=RUNS_PROJECT)
    assert run_rule("stateful-protected", claim) == []  # a run's claim ends with its stack


# --- trust-oidc-sub -----------------------------------------------------------------------------


def role(condition: dict[str, Any]) -> Resource:
    doc = {
        "Version": "1",
        "Statement": [
            {
                "Action": "sts:AssumeRole",
                "Effect": "Allow",
                "Condition": condition,
                "Principal": {"Federated": ["acs:ram::1:oidc-provider/ack-rrsa-x"]},
            }
        ],
    }
    return Resource(
        "alicloud:ram/role:Role",
        "jobs-role",
        {"assumeRolePolicyDocument": json.dumps(doc)},
        project=PLATFORM_PROJECT,
    )


def test_oidc_trust_needs_a_specific_subject() -> None:
    scoped = {
        "StringEquals": {
            "oidc:aud": "sts.aliyuncs.com",
            "oidc:sub": "system:serviceaccount:vision:jobs",
        }
    }
    assert run_rule("trust-oidc-sub", role(scoped)) == []
    one(
        run_rule("trust-oidc-sub", role({"StringEquals": {"oidc:aud": "sts.aliyuncs.com"}})),
        "Statement[0].Condition",
        "without a specific oidc:sub",
    )
    one(
        run_rule("trust-oidc-sub", role({"StringLike": {"oidc:sub": "system:serviceaccount:*"}})),
        "Statement[0].Condition",
        "system:serviceaccount:*",
    )


# --- allowed-regions ----------------------------------------------------------------------------


def test_providers_only_in_allowed_regions() -> None:
    provider = Resource(
        "pulumi:providers:alicloud", "alicloud", {"region": "us-west-1"}, project=PLATFORM_PROJECT
    )
    one(run_rule("allowed-regions", provider), "region", "'us-west-1' is not allowed")
    assert run_rule("allowed-regions", provider, regions=["us-west-1"]) == []
    home = Resource(provider.type, provider.name, {"region": "cn-hangzhou"})
    assert run_rule("allowed-regions", home) == []


# --- settings -----------------------------------------------------------------------------------


def test_settings_per_environment_and_clear_errors() -> None:
    from trainstack.errors import ConfigError

    values = {
        "policy:rules": json.dumps(
            {"allowed-registries": {"level": "advisory", "registries": ["x.io"]}}
        )
    }
    by_id = {s.rule.id: s for s in settings(values, "Pulumi.x.yaml")}
    assert by_id["allowed-registries"].level is Level.ADVISORY
    assert by_id["allowed-registries"].config["registries"] == ["x.io"]
    assert by_id["team-quota"].level is Level.MANDATORY
    with pytest.raises(ConfigError) as caught:
        settings({"policy:rules": {"allowed-registry": {}}}, "Pulumi.x.yaml")
    assert "policy:rules.allowed-registry: no such rule" in caught.value.message
    assert "allowed-registries" in (caught.value.hint or "")
    with pytest.raises(ConfigError) as caught:
        settings({"policy:rules": {"pod-fits-node-pool": {"headrom": 0.2}}}, "Pulumi.x.yaml")
    assert "headroom" in (caught.value.hint or "")
    with pytest.raises(ConfigError):
        settings({"policy:rules": {"team-quota": {"level": "strict"}}}, "Pulumi.x.yaml")


# a string where a list belongs (`registries: docker.io`) was split into its
# characters; every policy:rules value is now checked against the shape of the rule's default.
BAD_SETTINGS = [
    ("allowed-registries", "registries", "docker.io", "a list of strings"),
    ("allowed-registries", "registries", ["docker.io", 3], "a list of strings"),
    ("allowed-registries", "allowLatest", "no", "true or false"),
    ("allowed-registries", "platformRegistry", 1, "true or false"),
    ("pod-fits-node-pool", "headroom", "0.1", "a number"),
    ("pod-fits-node-pool", "headroom", True, "a number"),
    ("pod-fits-node-pool", "headroom", float("nan"), "a number"),
    ("pod-fits-node-pool", "headroom", 1.5, "a number between 0 and 1"),
    ("priority-cap", "maxPriority", "vision", "a mapping of team -> integer"),
    ("priority-cap", "maxPriority", {"vision": "high"}, "a mapping of team -> integer"),
    ("allowed-regions", "regions", "cn-hangzhou", "a list of strings"),
    ("platform-storage", "buckets", {"a": 1}, "a list of strings"),
]


@pytest.mark.parametrize(("rule", "key", "value", "expected"), BAD_SETTINGS)
def test_every_policy_rules_value_is_type_checked(
    rule: str, key: str, value: object, expected: str
) -> None:
    from trainstack.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        settings({"policy:rules": {rule: {key: value}}}, "Pulumi.x.yaml")
    assert f"policy:rules.{rule}.{key}: expected {expected}" in caught.value.message


def test_well_typed_policy_rules_values_pass() -> None:
    by_id = {
        s.rule.id: s
        for s in settings(
            {
                "policy:rules": {
                    "allowed-registries": {"registries": ["a.io"], "allowLatest": True},
                    "pod-fits-node-pool": {"headroom": 0},
                    "priority-cap": {"maxPriority": {"vision": 5}},
                }
            },
            "Pulumi.x.yaml",
        )
    }
    assert by_id["pod-fits-node-pool"].config["headroom"] == 0
    assert by_id["priority-cap"].config["maxPriority"] == {"vision": 5}
