"""One team's pods reach no other team's pods, nor the cloud's metadata endpoint.

On ack the cluster is created with Terway and NetworkPolicy on (flannel enforces none, and a
cluster's CNI cannot be changed after creation: ACK "ACK managed cluster network planning"), its
pods on pod vSwitches of their own. Every team namespace, in both modes, gets the same
NetworkPolicy. Its effect is shown with a small evaluator of NetworkPolicy semantics (Kubernetes
docs, "Network Policies"): a connection passes when the source pod's egress and, for a pod
destination, the destination pod's ingress both allow it; a pod selected by no policy of a
direction is open in that direction; the rules of all policies selecting a pod add up.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.infra.test_config import _set_up, error_of
from tests.infra.test_team_access import build

pytestmark = pytest.mark.usefixtures(_set_up.__name__)  # error_of's shipped environments

NETPOL = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
CLUSTER = "alicloud:cs/managedKubernetes:ManagedKubernetes"
SWITCH = "alicloud:vpc/switch:Switch"
METADATA = "100.100.100.200"  # Alibaba Cloud's ECS metadata service
OSS_INTERNAL = "100.118.28.10"  # what oss-cn-hangzhou-internal.aliyuncs.com resolves to


# --- the CNI --------------------------------------------------------------------------------


def test_the_ack_cluster_is_created_with_terway_and_network_policy_on(mocks: Any) -> None:
    build(mocks, "ack-dev")
    cluster = mocks.one(CLUSTER, "cluster")
    addons = {a["name"]: a.get("config") for a in cluster["addons"]}
    assert "flannel" not in addons
    assert json.loads(addons["terway-eniip"]) == {"NetworkPolicy": "true"}
    assert "podCidr" not in cluster
    # Terway takes pod IPs from pod vSwitches, one per zone beside the nodes' own
    switches = {r.name: r.inputs for r in mocks.of_type(SWITCH)}
    pods = {n: s for n, s in switches.items() if n.startswith("vsw-pods-")}
    assert {s["zoneId"] for s in pods.values()} == {"cn-hangzhou-h", "cn-hangzhou-i"}
    assert cluster["podVswitchIds"] == [f"{n}-id" for n in sorted(pods)]
    assert not set(cluster["podVswitchIds"]) & set(cluster["vswitchIds"])


def test_the_nas_admits_the_nodes_but_not_the_pod_vswitches(mocks: Any) -> None:
    # Terway pods talk to the VPC from their own addresses: a pod could speak NFS to the
    # mount target itself (no_squash) if the access group admitted the pod vSwitches.
    build(mocks, "ack-dev")
    rules = {r.inputs["sourceCidrIp"] for r in mocks.of_type("alicloud:nas/accessRule:AccessRule")}
    assert rules == {"10.1.0.0/16", "10.2.0.0/16"}
    pods = [ipaddress.ip_network(c) for c in pod_vswitch_cidrs(mocks)]
    assert not any(ipaddress.ip_network(r).overlaps(p) for r in rules for p in pods)


def test_a_stale_flannel_pod_cidr_says_a_new_cluster_is_needed() -> None:
    err = error_of("ack-dev", trainstack__podCidr="172.20.0.0/16")
    assert "trainstack:podCidr" in err.message
    assert "new cluster" in err.message and "Terway" in err.message


@pytest.mark.parametrize(
    ("cidrs", "needle"),
    [
        (["10.101.0.0/16"], "one per zone"),
        (["10.1.0.0/16", "10.102.0.0/16"], "apart from vswitchCidrs"),
        (["10.101.0.0/16", "192.168.0.0/16"], "inside vpcCidr"),
        (["10.101.0.0/16", "10.101.128.0/17"], "apart from each other"),
    ],
)
def test_pod_vswitches_are_one_per_zone_inside_the_vpc_apart_from_the_nodes(
    cidrs: list[str], needle: str
) -> None:
    assert needle in error_of("ack-dev", trainstack__podVswitchCidrs=cidrs).message


# --- a NetworkPolicy evaluator --------------------------------------------------------------


@dataclass(frozen=True)
class Pod:
    namespace: str
    ip: str
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Cluster:
    namespaces: Mapping[str, Mapping[str, str]]  # name -> labels
    policies: Sequence[Mapping[str, Any]]  # as registered: {metadata, spec}

    def selects(self, selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
        selector = selector or {}
        for key, value in (selector.get("matchLabels") or {}).items():
            if labels.get(key) != value:
                return False
        for expr in selector.get("matchExpressions") or ():
            has, op = expr["key"] in labels, expr["operator"]
            if op == "In" and labels.get(expr["key"]) not in expr["values"]:
                return False
            if op == "NotIn" and has and labels[expr["key"]] in expr["values"]:
                return False
            if (op == "Exists") != has and op in ("Exists", "DoesNotExist"):
                return False
        return True

    def peer_matches(self, peer: Mapping[str, Any], policy_ns: str, dst: Pod | str) -> bool:
        if "ipBlock" in peer:
            ip = ipaddress.ip_address(dst.ip if isinstance(dst, Pod) else dst)
            block = peer["ipBlock"]
            return ip in ipaddress.ip_network(block["cidr"]) and not any(
                ip in ipaddress.ip_network(e) for e in block.get("except") or ()
            )
        if not isinstance(dst, Pod):
            return False  # selectors pick pods, never an outside address
        if "namespaceSelector" in peer:
            if not self.selects(peer["namespaceSelector"], self.namespaces[dst.namespace]):
                return False
        elif dst.namespace != policy_ns:
            return False
        return self.selects(peer.get("podSelector"), dst.labels)

    @staticmethod
    def port_matches(rule: Mapping[str, Any], port: int, protocol: str) -> bool:
        ports = rule.get("ports") or ()
        return not ports or any(
            p.get("protocol", "TCP") == protocol and p.get("port") in (None, port) for p in ports
        )

    def allows(self, pod: Pod, other: Pod | str, port: int, protocol: str, kind: str) -> bool:
        """Does `pod`'s side allow traffic of direction `kind` (Ingress/Egress) with `other`?"""
        key, peers = ("ingress", "from") if kind == "Ingress" else ("egress", "to")
        selecting = [
            p
            for p in self.policies
            if p["metadata"]["namespace"] == pod.namespace
            and kind in p["spec"]["policyTypes"]
            and self.selects(p["spec"]["podSelector"], pod.labels)
        ]
        if not selecting:
            return True
        return any(
            self.port_matches(rule, port, protocol)
            and (
                not rule.get(peers)
                or any(
                    self.peer_matches(peer, p["metadata"]["namespace"], other)
                    for peer in rule[peers]
                )
            )
            for p in selecting
            for rule in p["spec"].get(key) or ()
        )

    def passes(self, src: Pod, dst: Pod | str, port: int, protocol: str = "TCP") -> bool:
        if not self.allows(src, dst, port, protocol, "Egress"):
            return False
        return not isinstance(dst, Pod) or self.allows(dst, src, port, protocol, "Ingress")


def pod_vswitch_cidrs(mocks: Any) -> list[str]:
    return sorted(
        r.inputs["cidrBlock"] for r in mocks.of_type(SWITCH) if r.name.startswith("vsw-pods-")
    )


def cluster_of(mocks: Any) -> Cluster:
    namespaces = {
        r.inputs["metadata"]["name"]: {
            **r.inputs["metadata"].get("labels", {}),
            "kubernetes.io/metadata.name": r.inputs["metadata"]["name"],
        }
        for r in mocks.of_type("kubernetes:core/v1:Namespace")
    }
    namespaces["kube-system"] = {"kubernetes.io/metadata.name": "kube-system"}
    return Cluster(namespaces, [dict(r.inputs) for r in mocks.of_type(NETPOL)])


def test_the_evaluator_leaves_a_namespace_without_policies_open() -> None:
    # the evaluator's own semantics on a hand-made policy: a namespace open without policies
    c = Cluster({"a": {}, "b": {}}, [])
    assert c.passes(Pod("a", "10.101.0.5"), Pod("b", "10.102.0.5"), 2222)


@pytest.mark.parametrize("env", ["ack-dev", "local"])
def test_a_team_reaches_its_own_pods_dns_and_oss_but_no_other_team_nor_the_metadata(
    mocks: Any, env: str
) -> None:
    build(mocks, env)
    c = cluster_of(mocks)
    assert {p["metadata"]["namespace"] for p in c.policies} == {"vision", "nlp"}
    # Terway gives pods addresses from the pod vSwitches; a kind cluster from its pod CIDR
    base = "10.101.0." if env == "ack-dev" else "10.244.0."
    master = Pod("vision", base + "10", {"replica-type": "master"})
    worker = Pod("vision", base + "11", {"replica-type": "worker"})
    other = Pod("nlp", base + "20", {"replica-type": "master"})
    dns = Pod("kube-system", base + "2", {"k8s-app": "kube-dns"})
    system = Pod("kube-system", base + "3", {"app": "metrics-server"})
    # the job's own pods talk to each other (c10d store, TF PS, XGBoost tracker)
    assert c.passes(worker, master, 23456) and c.passes(master, worker, 2222)
    assert c.passes(worker, dns, 53, "UDP") and c.passes(worker, dns, 53, "TCP")
    assert c.passes(worker, OSS_INTERNAL, 443) and c.passes(worker, "47.96.0.10", 443)
    # another team's replicas, either way, on any port
    for port in (23456, 2222, 9999, 53):
        assert not c.passes(worker, other, port)
        assert not c.passes(other, master, port)
    # the instance metadata: Alibaba Cloud's, and the link-local one other clouds use
    assert not c.passes(worker, METADATA, 80)
    assert not c.passes(worker, "169.254.169.254", 80)
    assert not c.passes(system, master, 2222)  # nothing outside the namespace comes in
    if env == "ack-dev":
        # on Terway the pod vSwitches are left out of "everything else": another team's pods
        # are refused on the way out too, not only by their own ingress
        assert not c.allows(worker, other, 23456, "TCP", "Egress")
        assert not c.allows(worker, system, 443, "TCP", "Egress")
        for cidr in pod_vswitch_cidrs(mocks):
            inside = str(next(ipaddress.ip_network(cidr).hosts()))
            assert not c.passes(worker, inside, 443)
