"""A team Service with `spec.externalIPs` captures other pods' traffic to those addresses
(CVE-2020-8554); a LoadBalancer bills a cloud load balancer, a NodePort opens a port on every
node. The policy `trainstack-team-services`, evaluated as registered, refuses them in team
namespaces and admits every Service KubeDL creates for the shipped runs (headless ClusterIP)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.infra.admission import Evaluator, Request, policies_named
from tests.infra.test_team_access import build
from trainstack.platformnames import TEAM_NAMESPACE_LABEL

REPO = Path(__file__).resolve().parents[2]
POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
POLICY_BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
NAME = "trainstack-team-services"
TEAM_USER = "system:serviceaccount:vision:trainstack-runner"


def service(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "vision"},
        "spec": {"ports": [{"port": 80}], **spec},
    }


def _registered(mocks: Any, env: str) -> tuple[Any, Any, dict[str, Any]]:
    """(the policy's spec, its binding, each namespace's labels) as ``env``'s build registers
    them."""
    build(mocks, env)
    (spec,) = policies_named(mocks.of_type(POLICY), NAME).values()
    (binding,) = policies_named(mocks.of_type(POLICY_BINDING), NAME).values()
    labels = {
        r.inputs["metadata"]["name"]: r.inputs["metadata"]["labels"]
        for r in mocks.of_type("kubernetes:core/v1:Namespace")
    }
    return spec, binding, labels


def _ack_dev(mocks: Any) -> tuple[Any, Any, dict[str, Any]]:
    return _registered(mocks, "ack-dev")


def _local(mocks: Any) -> tuple[Any, Any, dict[str, Any]]:
    return _registered(mocks, "local")


# Each environment is built once per module (``built_once``): the tests only read the policy.
BUILT = {"ack-dev": _ack_dev, "local": _local}


@pytest.fixture(params=["ack-dev", "local"])
def policy(built_once: Any, request: pytest.FixtureRequest) -> dict[str, Any]:
    spec, binding, labels = built_once(BUILT[request.param])
    assert binding == {"policyName": NAME, "validationActions": ["Deny"]}
    # team namespaces carry the team label, and only they match
    constraints = spec["matchConstraints"]
    assert constraints["namespaceSelector"] == {
        "matchExpressions": [{"key": TEAM_NAMESPACE_LABEL, "operator": "Exists"}]
    }
    assert {n for n, ls in labels.items() if TEAM_NAMESPACE_LABEL in ls} == {"vision", "nlp"}
    (rule,) = constraints["resourceRules"]
    assert rule["resources"] == ["services"] and set(rule["operations"]) == {"CREATE", "UPDATE"}
    assert spec["failurePolicy"] == "Fail"
    return dict(spec)


HOSTILE = [
    service(externalIPs=["10.1.0.7"]),
    service(type="ClusterIP", externalIPs=["100.100.100.200"]),
    service(clusterIP="None", externalIPs=["47.96.0.10"]),
    service(type="LoadBalancer"),
    service(type="NodePort"),
    service(type="NodePort", ports=[{"port": 80, "nodePort": 30080}]),
    service(type="ExternalName", externalName="oss-cn-hangzhou-internal.aliyuncs.com"),
]


@pytest.mark.parametrize("obj", HOSTILE, ids=lambda o: str(sorted(o["spec"])))
def test_a_hostile_service_is_refused(policy: dict[str, Any], obj: dict[str, Any]) -> None:
    evaluator = Evaluator()
    for operation, old in (("CREATE", None), ("UPDATE", service())):
        failed = evaluator.failures(
            policy, Request(operation, obj, old_object=old, username=TEAM_USER)
        )
        assert failed, (operation, obj["spec"])


def shipped_services() -> list[dict[str, Any]]:
    """The Services KubeDL creates for every shipped run that renders with default options."""
    from tests.kubedl.expand import expand
    from trainstack.render import RenderError, render_run
    from trainstack.spec import load_run

    out: list[dict[str, Any]] = []
    for path in sorted(REPO.glob("components/*/runs/*.yaml")):
        try:
            manifests = render_run(load_run(path))
        except RenderError:
            continue
        assert not [m for m in manifests if m["kind"] == "Service"], path  # none rendered
        out += [{"apiVersion": "v1", "kind": "Service", **s} for s in expand(manifests).services]
    return out


def test_every_service_the_shipped_runs_get_is_admitted(policy: dict[str, Any]) -> None:
    services = shipped_services()
    assert len(services) >= 5
    evaluator = Evaluator()
    for obj in [*services, service(), service(type="ClusterIP", clusterIP="None")]:
        assert evaluator.failures(policy, Request("CREATE", obj)) == [], obj
