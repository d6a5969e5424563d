"""Both modes: per team namespace one NetworkPolicy, ``trainstack-isolation``.

NetworkPolicy is an allow-list (Kubernetes docs, "Network Policies"): once a policy selects a
pod for a direction, only what some rule allows passes, and a connection between two pods needs
the source's egress and the destination's ingress both to allow it. The policy selects every pod
of the namespace:

- ingress only from the namespace's own pods: a job's replicas talk to each other (the c10d
  store, a TF parameter server, the XGBoost tracker, the MPI launcher's workers) and nothing
  else connects to them: KubeDL's controller and the Job controller only call the API server,
  and traffic between a pod and its own node (kubelet probes) is allowed whatever the policy
  says ("Network Policies": "traffic to and from the node where a Pod is running is always
  allowed");
- egress to the namespace's own pods, to the cluster DNS (CoreDNS, ``k8s-app: kube-dns`` in
  ``kube-system``, port 53), and to every other address except the instance metadata endpoints
  and the pod network: OSS, the API server (the MPI launcher's ``kubectl exec``), package
  mirrors and git remotes stay reachable; another team's pods, the platform's own pods and the
  metadata service (the node's RAM role credentials) do not.

Metadata: Alibaba Cloud's ECS metadata is ``100.100.100.200``; ``169.254.169.254`` is the one
most other clouds use, so a kubeconfig-mode cluster on one of them is covered too. The rest of
169.254.0.0/16 stays open: ACK's NodeLocal DNSCache listens on 169.254.20.10.

The pod network: on ack, Terway gives pods VPC addresses from the pod vSwitches, so those blocks
are left out of "every other address" and a pod reaches another namespace's pods only where a
selector allows it (DNS). In kubeconfig mode the cluster's pod CIDR is not known to the platform:
"every other address" includes other namespaces' pods, and another team's pods are refused by
that team's own ingress rule (it admits only its own namespace). Either way, only a CNI that
enforces NetworkPolicy makes any of this true (docs/platform.md, "Network isolation").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s

from trainstack.platformnames import NAMESPACE_NAME_LABEL

POLICY_NAME = "trainstack-isolation"
METADATA_ENDPOINTS = ("100.100.100.200/32", "169.254.169.254/32")
DNS_NAMESPACE = "kube-system"
# The label CoreDNS's pods carry (Kubernetes docs, "Debugging DNS Resolution":
# `kubectl get pods --namespace=kube-system -l k8s-app=kube-dns`).
DNS_POD_LABELS = {"k8s-app": "kube-dns"}
ANYWHERE = "0.0.0.0/0"


def isolation_spec(pod_network: Sequence[str]) -> dict[str, Any]:
    """The policy's spec (camelCase, as the API server reads it); ``pod_network``: the blocks
    pods take their addresses from, where the platform knows them (ack's pod vSwitches)."""
    same_namespace: dict[str, Any] = {"podSelector": {}}
    dns = {
        "to": [
            {
                "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: DNS_NAMESPACE}},
                "podSelector": {"matchLabels": dict(DNS_POD_LABELS)},
            }
        ],
        "ports": [{"protocol": p, "port": 53} for p in ("UDP", "TCP")],
    }
    outside = {"ipBlock": {"cidr": ANYWHERE, "except": [*METADATA_ENDPOINTS, *pod_network]}}
    return {
        "podSelector": {},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [same_namespace]}],
        "egress": [{"to": [same_namespace]}, dns, {"to": [outside]}],
    }


def build_isolation(
    team: str,
    namespace: pulumi.Input[str],
    labels: dict[str, str],
    pod_network: Sequence[str],
    opts: pulumi.ResourceOptions,
) -> k8s.networking.v1.NetworkPolicy:
    return k8s.networking.v1.NetworkPolicy(
        f"isolation-{team}",
        metadata={"name": POLICY_NAME, "namespace": namespace, "labels": labels},
        # camelCase keys, as the API server reads them: the provider passes them through
        spec=cast(k8s.networking.v1.NetworkPolicySpecArgsDict, isolation_spec(pod_network)),
        opts=opts,
    )
