"""The plan-level facts of tenancy: what every namespace, LimitRange, pool and stateful
resource the platform creates carries, on both shipped environments. Each was missing before."""

from __future__ import annotations

from typing import Any

import pytest

from tests.infra.test_team_access import build
from trainstack.errors import ConfigError

NS = "kubernetes:core/v1:Namespace"
ENFORCE = "pod-security.kubernetes.io/enforce"


@pytest.mark.parametrize("env", ["local", "ack-dev"])
def test_every_namespace_the_platform_creates_enforces_pod_security(mocks: Any, env: str) -> None:
    build(mocks, env, **{"trainstack:hostPathVolumes": "false"} if env == "local" else {})
    namespaces = {r.name: r.inputs["metadata"]["labels"] for r in mocks.of_type(NS)}
    assert set(namespaces) == {
        "ns-vision",
        "ns-nlp",
        "kubedl-namespace",
        "kueue-namespace",
        "admission-namespace",
    }
    for name, labels in namespaces.items():
        # nothing runs where the admission policies' parameters are kept
        assert labels[ENFORCE] == ("restricted" if name == "admission-namespace" else "baseline")
        assert labels["pod-security.kubernetes.io/audit"] == "restricted", name
        assert labels["pod-security.kubernetes.io/warn"] == "restricted", name
        assert labels[f"{ENFORCE}-version"] == "v1.30", name


def test_a_single_user_kind_cluster_may_admit_host_paths_in_team_namespaces(mocks: Any) -> None:
    # the shipped kind environment sets trainstack:hostPathVolumes (file:// bindings)
    outputs = build(mocks, "local")
    labels = {r.name: r.inputs["metadata"]["labels"] for r in mocks.of_type(NS)}
    assert labels["ns-vision"][ENFORCE] == "privileged"
    assert labels["kubedl-namespace"][ENFORCE] == "baseline"
    assert mocks.resolve(outputs["hostPathVolumes"])[0] is True


def test_host_path_volumes_is_kubeconfig_mode_only(mocks: Any) -> None:
    with pytest.raises(ConfigError, match="hostPathVolumes"):
        build(mocks, "ack-dev", **{"trainstack:hostPathVolumes": "true"})


@pytest.mark.parametrize("env", ["local", "ack-dev"])
def test_limit_ranges_set_default_limits_too(mocks: Any, env: str) -> None:
    build(mocks, env)
    ranges = mocks.of_type("kubernetes:core/v1:LimitRange")
    assert len(ranges) == 2
    for r in ranges:
        (limit,) = r.inputs["spec"]["limits"]
        assert limit["defaultRequest"] == {
            "cpu": "500m",
            "memory": "1Gi",
            "ephemeral-storage": "1Gi",
        }
        assert limit["default"] == {"cpu": "2", "memory": "4Gi", "ephemeral-storage": "50Gi"}


def test_a_default_limit_below_the_default_request_is_refused(mocks: Any) -> None:
    teams = (
        '[{"name": "a", "quota": {"cpu": "4", "memory": "8Gi"}, '
        '"defaults": {"memory": "2Gi", "limitMemory": "1Gi"}}]'
    )
    with pytest.raises(ConfigError, match=r"limitMemory: expected a limit at least the default"):
        build(mocks, "local", **{"trainstack:teams": teams})


def test_what_cannot_be_replaced_without_breaking_the_platform_is_protected(mocks: Any) -> None:
    from trainstack.infra.platform.protection import STATEFUL_TYPES

    build(mocks, "ack-dev")
    for typ in (
        "alicloud:nas/mountTarget:MountTarget",
        "alicloud:vpc/network:Network",
        "alicloud:vpc/switch:Switch",
        "alicloud:cs/managedKubernetes:ManagedKubernetes",
        "alicloud:ecs/ecsKeyPair:EcsKeyPair",
        "alicloud:ram/role:Role",
    ):
        assert typ in STATEFUL_TYPES
        assert mocks.of_type(typ), typ


def test_the_api_allow_list_holds_what_the_cluster_needs_and_is_bound_by_pulumi_up(
    mocks: Any,
) -> None:
    build(mocks, "ack-dev")
    entries = {
        r.inputs["entry"]: r.inputs["comment"]
        for r in mocks.of_type("alicloud:slb/aclEntryAttachment:AclEntryAttachment")
    }
    # ACK "Configure API server access control": the control plane and the VPC, then the user's
    assert set(entries) == {"100.104.0.0/16", "10.0.0.0/8", "198.51.100.7/32"}
    (binding,) = mocks.of_type("command:local:Command")
    assert binding.inputs["interpreter"] == ["/bin/sh", "-c"]
    create = binding.inputs["create"]
    assert "SetLoadBalancerTCPListenerAttribute" in create and "--AclStatus on" in create
    assert "--AclType white" in create and '"$TS_ACL"' in create
    assert "--AclStatus off" in binding.inputs["delete"]
    assert binding.inputs["environment"]["TS_PORT"] == "6443"
    assert binding.inputs["environment"]["TS_REGION"] == "cn-hangzhou"


def test_a_public_endpoint_needs_the_aliyun_cli_before_pulumi_up(
    mocks: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    import pulumi

    from trainstack.infra.platform import program

    mocks.use_env("ack-dev")
    load = program.load_stack_config
    monkeypatch.setattr(program, "load_stack_config", lambda: load(root=mocks.root))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pulumi.RunError, match="aliyun CLI"):
        mocks.run(program.main)


def test_kubedl_may_restart_elastic_workers_in_place(mocks: Any) -> None:
    """KubeDL v0.5.0 controllers/pytorch/elastic_scale.go manages OpenKruise
    ContainerRecreateRequests; its all_in_one.yaml's mis-indented grant gives it none."""
    build(mocks, "local")
    (role,) = [
        r.inputs
        for r in mocks.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
        if r.name == "kubedl-role"
    ]
    kruise = [rule for rule in role["rules"] if rule.get("apiGroups") == ["apps.kruise.io"]]
    assert kruise and set(kruise[0]["resources"]) == {
        "containerrecreaterequests",
        "containerrecreaterequests/status",
    }
    assert {"create", "delete", "get", "watch"} <= set(kruise[0]["verbs"])


def test_gang_scheduling_on_ack_is_ack_pros_coscheduling_only(mocks: Any) -> None:
    # ACK "Work with gang scheduling": only ACK Pro's scheduler; nothing installs volcano there
    with pytest.raises(
        ConfigError, match=r"kubedl:gangScheduler: expected none on an ack\.standard"
    ):
        build(mocks, "ack-dev", **{"trainstack:clusterSpec": "ack.standard"})
    with pytest.raises(
        ConfigError, match=r"kubedl:gangScheduler: expected kube-coscheduler or none"
    ):
        build(mocks, "ack-dev", **{"kubedl:gangScheduler": "volcano"})
    build(
        mocks,
        "ack-dev",
        **{"trainstack:clusterSpec": "ack.standard", "kubedl:gangScheduler": "none"},
    )


@pytest.mark.parametrize("env", ["local", "ack-dev"])
def test_no_team_may_schedule_pods_at_kubernetes_system_priorities(mocks: Any, env: str) -> None:
    # Kubernetes admits system-node-critical and system-cluster-critical in any namespace
    # (Kubernetes docs, "Pod Priority and Preemption"); at 2e9 they preempt every team and
    # CoreDNS. Every team's cap quota counts them at 0 pods, whatever its maxPriority.
    build(
        mocks,
        env,
        **{
            "trainstack:teams": '[{"name": "top", "quota": {"cpu": "4", '
            '"memory": "8Gi"}, "maxPriority": 9}, {"name": "low", "quota": '
            '{"cpu": "4", "memory": "8Gi"}, "maxPriority": 1}]',
            "kueue:teams": "{}",
        },
    )
    caps = {
        r.inputs["metadata"]["namespace"]: r.inputs["spec"]
        for r in mocks.of_type("kubernetes:core/v1:ResourceQuota")
        if r.inputs["metadata"]["name"] == "trainstack-priority-cap"
    }
    assert set(caps) == {"top", "low"}
    for spec in caps.values():
        assert spec["hard"] == {"pods": "0"}
        (expr,) = spec["scopeSelector"]["matchExpressions"]
        assert (expr["scopeName"], expr["operator"]) == ("PriorityClass", "In")
        assert {"system-node-critical", "system-cluster-critical"} <= set(expr["values"])
    assert (
        "trainstack-priority-9" not in caps["top"]["scopeSelector"]["matchExpressions"][0]["values"]
    )
    assert "trainstack-priority-2" in caps["low"]["scopeSelector"]["matchExpressions"][0]["values"]


QUOTA = "kubernetes:core/v1:ResourceQuota"


def team_quotas(mocks: Any) -> dict[str, dict[str, str]]:
    return {
        r.inputs["metadata"]["namespace"]: r.inputs["spec"]["hard"]
        for r in mocks.of_type(QUOTA)
        if r.inputs["metadata"]["name"] == "trainstack-quota"
    }


@pytest.mark.parametrize("env", ["local", "ack-dev"])
def test_quotas_bound_storage_claims_service_types_ephemeral_storage_and_objects(
    mocks: Any, env: str
) -> None:
    build(mocks, env)
    quotas = team_quotas(mocks)
    assert set(quotas) == {"vision", "nlp"}
    for hard in quotas.values():
        assert hard["services.loadbalancers"] == "0"
        assert hard["services.nodeports"] == "0"
        assert hard["requests.storage"] == "2Ti"
        assert hard["persistentvolumeclaims"] == "100"
        assert hard["requests.ephemeral-storage"] == "500Gi"
        assert hard["limits.ephemeral-storage"] == "10Ti"
        for objects in ("configmaps", "secrets", "services", "jobs.batch"):
            assert int(hard[f"count/{objects}"]) > 0, objects
        # every KubeDL kind the platform enables, as count/<plural>.<group>
        kubedl = {k for k in hard if k.startswith("count/") and "kubedl.io" in k}
        assert kubedl == {
            "count/tfjobs.training.kubedl.io",
            "count/pytorchjobs.training.kubedl.io",
            "count/xgboostjobs.training.kubedl.io",
            "count/mpijobs.training.kubedl.io",
            "count/elasticbatchjobs.inference.kubedl.io",
        }


@pytest.mark.parametrize("env", ["local", "ack-dev"])
def test_every_container_resource_the_quota_counts_has_a_limit_range_default(
    mocks: Any, env: str
) -> None:
    # A rendered container states no ephemeral-storage: the LimitRange gives it a request (what
    # the quota counts) and a limit (where the kubelet evicts it), so it is admitted and bounded.
    build(mocks, env)
    ranges = {
        r.inputs["metadata"]["namespace"]: r.inputs["spec"]["limits"][0]
        for r in mocks.of_type("kubernetes:core/v1:LimitRange")
    }
    for namespace, hard in team_quotas(mocks).items():
        for key in hard:
            kind, _, resource = key.partition(".")
            if kind == "requests" and resource in ("cpu", "memory", "ephemeral-storage"):
                assert resource in ranges[namespace]["defaultRequest"], key
            if kind == "limits":
                assert resource in ranges[namespace]["default"], key


def test_a_team_sets_its_own_storage_services_and_object_counts(mocks: Any) -> None:
    teams = (
        '[{"name": "a", "quota": {"cpu": "4", "memory": "8Gi", "storage": "500Gi", '
        '"persistentVolumeClaims": 10, "loadBalancers": 1, "nodePorts": 2, '
        '"ephemeralStorage": "50Gi", "limitEphemeralStorage": "200Gi", '
        '"objects": {"secrets": 20, "pytorchjobs.training.kubedl.io": 5}}, '
        '"defaults": {"ephemeralStorage": "2Gi", "limitEphemeralStorage": "8Gi"}}]'
    )
    build(mocks, "local", **{"trainstack:teams": teams})
    hard = team_quotas(mocks)["a"]
    assert hard["requests.storage"] == "500Gi" and hard["persistentvolumeclaims"] == "10"
    assert hard["services.loadbalancers"] == "1" and hard["services.nodeports"] == "2"
    assert hard["requests.ephemeral-storage"] == "50Gi"
    assert hard["limits.ephemeral-storage"] == "200Gi"
    assert hard["count/secrets"] == "20" and hard["count/configmaps"] == "500"
    assert hard["count/pytorchjobs.training.kubedl.io"] == "5"
    (limits,) = mocks.of_type("kubernetes:core/v1:LimitRange")
    assert limits.inputs["spec"]["limits"][0]["default"]["ephemeral-storage"] == "8Gi"


@pytest.mark.parametrize(
    ("quota", "needle"),
    [
        ('"objects": {"secret": 3}', r"quota\.objects\.secret: unknown key"),
        ('"loadBalancers": -1', "loadBalancers"),
    ],
)
def test_a_wrong_quota_entry_is_one_clear_error(mocks: Any, quota: str, needle: str) -> None:
    teams = f'[{{"name": "a", "quota": {{"cpu": "4", "memory": "8Gi", {quota}}}}}]'
    with pytest.raises(ConfigError, match=needle):
        build(mocks, "local", **{"trainstack:teams": teams})


def test_an_ephemeral_default_limit_below_its_request_is_refused(mocks: Any) -> None:
    teams = (
        '[{"name": "a", "quota": {"cpu": "4", "memory": "8Gi"}, '
        '"defaults": {"ephemeralStorage": "4Gi", "limitEphemeralStorage": "1Gi"}}]'
    )
    with pytest.raises(ConfigError, match=r"limitEphemeralStorage: expected a limit at least"):
        build(mocks, "local", **{"trainstack:teams": teams})
