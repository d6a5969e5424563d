"""PersistentVolumes are cluster-scoped, so every team's runner holds one cluster-wide right
(teamaccess.py). A ValidatingAdmissionPolicy per team narrows it: the runner may create, change
and delete only PVs named after its namespace, and may not pre-bind one to another namespace's
claim. Without the guard, a team could delete another team's PVs or repoint them at any bucket.

The CEL is evaluated here with cel-python, a CEL implementation of the same specification the
API server follows, on admission requests shaped as Kubernetes sends them (`request`, `object`,
`oldObject`; `object` is null on DELETE).
"""

from __future__ import annotations

from typing import Any

import celpy
import pytest

from tests.infra.test_team_access import build
from trainstack.errors import ConfigError
from trainstack.infra.platform.teamaccess import guard_match, guard_validations

POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
POLICY_BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
RUNNER = "system:serviceaccount:{}:trainstack-runner"


@pytest.mark.parametrize("env", ["local", "ack-dev"])
def test_each_team_gets_a_pv_guard_bound_to_deny(mocks: Any, env: str) -> None:
    build(mocks, env)
    policies = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in mocks.of_type(POLICY)}
    assert sorted(policies) == ["trainstack-team-volumes-nlp", "trainstack-team-volumes-vision"]
    for namespace in ("nlp", "vision"):
        spec = policies[f"trainstack-team-volumes-{namespace}"]
        assert spec["failurePolicy"] == "Fail"
        assert spec["matchConstraints"] == {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE", "DELETE"],
                    "resources": ["persistentvolumes"],
                }
            ]
        }
        assert spec["matchConditions"] == [
            {"name": "team-runner", "expression": guard_match(namespace)}
        ]
        assert spec["validations"] == guard_validations(namespace)
    bindings = {
        r.inputs["metadata"]["name"]: r.inputs["spec"] for r in mocks.of_type(POLICY_BINDING)
    }
    assert bindings == {
        name: {"policyName": name, "validationActions": ["Deny"]} for name in policies
    }


def admit(namespace: str, user: str, operation: str, name: str, **spec: Any) -> bool | None:
    """The guard of `namespace` on one PV request: None when it does not apply to the request,
    else whether every validation holds."""
    pv = {"metadata": {"name": name}, "spec": spec}
    activation = celpy.json_to_cel(
        {
            "request": {"operation": operation, "userInfo": {"username": user}},
            "object": None if operation == "DELETE" else pv,
            "oldObject": None if operation == "CREATE" else pv,
        }
    )
    env = celpy.Environment()

    def holds(expression: str) -> bool:
        return bool(env.program(env.compile(expression)).evaluate(activation))

    if not holds(guard_match(namespace)):
        return None
    return all(holds(v["expression"]) for v in guard_validations(namespace))


def test_a_team_runner_may_manage_only_the_pvs_named_after_its_namespace() -> None:
    nlp = RUNNER.format("nlp")
    for operation in ("CREATE", "UPDATE", "DELETE"):
        assert admit("nlp", nlp, operation, "nlp-census-1gpu-in-train") is True
        assert admit("nlp", nlp, operation, "vision-mnist-baseline-01-in-train") is False
        assert admit("nlp", nlp, operation, "nlpx-run-in-train") is False
    # a PV may be pre-bound only to a claim of its own namespace
    own = {"claimRef": {"namespace": "nlp", "name": "c"}}
    other = {"claimRef": {"namespace": "vision", "name": "c"}}
    assert admit("nlp", nlp, "CREATE", "nlp-run-in", **own) is True
    assert admit("nlp", nlp, "UPDATE", "nlp-run-in", **other) is False


def test_the_guard_leaves_other_users_alone() -> None:
    # another team's runner is its own guard's business; the PV binder (which sets claimRef when
    # it binds) and cluster admins are not matched at all
    for user in (
        RUNNER.format("vision"),
        "system:serviceaccount:kube-system:persistent-volume-binder",
        "system:serviceaccount:nlp:default",
        "kubernetes-admin",
    ):
        assert admit("nlp", user, "DELETE", "vision-x") is None, user


def test_ack_refuses_a_kubernetes_version_without_admission_policies(mocks: Any) -> None:
    with pytest.raises(ConfigError, match=r"kubernetesVersion: expected Kubernetes 1\.30 or later"):
        build(mocks, "ack-dev", **{"trainstack:kubernetesVersion": "1.28.3-aliyun.1"})
    build(mocks, "ack-dev", **{"trainstack:kubernetesVersion": "1.31.1-aliyun.1"})
