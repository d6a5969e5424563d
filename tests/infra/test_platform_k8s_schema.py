"""Mocks accept any object; the API server does not. Every Kubernetes object the platform
program registers, on each shipped environment, must validate against the Kubernetes 1.30 API
schema (kubernetes_validate, strict: unknown fields are errors), as the rendered jobs do in
tests/render/test_schema.py. 1.30 is the oldest version the platform accepts
(config_ack.MIN_KUBERNETES_MINOR)."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
from pulumi.runtime.rpc import is_rpc_secret, unwrap_rpc_secret

from tests.infra.conftest import RecordingMocks
from trainstack.infra.platform.config_ack import MIN_KUBERNETES_MINOR

K8S_VERSION = f"1.{MIN_KUBERNETES_MINOR}"


def plain(value: Any) -> Any:
    """The value as the API server receives it: Pulumi's secret wrappers removed."""
    if is_rpc_secret(value):
        return plain(unwrap_rpc_secret(value))
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


@pytest.mark.parametrize("env", ["local", "ack-dev"])
def test_every_kubernetes_object_the_platform_registers_is_valid(
    mocks: RecordingMocks, env: str
) -> None:
    mocks.use_env(env)
    mocks.build()
    # Kueue's objects are custom resources, which the Kubernetes schema does not hold
    # (tests/infra/test_platform_kueue.py checks them against Kueue's API).
    objects = [
        (r.typ, r.name, plain(dict(r.inputs)))
        for r in mocks.resources
        if r.typ.startswith("kubernetes:")
        and not r.typ.startswith("pulumi:providers:")
        and not r.typ.startswith("kubernetes:kueue.x-k8s.io/")
    ]
    # what the platform is made of on a cluster: checked, not just present
    kinds = {obj["kind"] for _, _, obj in objects}
    assert {
        "Namespace",
        "ResourceQuota",
        "LimitRange",
        "PriorityClass",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "Deployment",
        "Secret",
        "StorageClass",
        "CustomResourceDefinition",
    } <= kinds
    problems = []
    for typ, name, obj in objects:
        try:
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as e:
            problems.append(f"{typ} {name}: {e.message} at {'.'.join(map(str, e.path))}")
    assert not problems, "\n".join(problems)


def test_the_check_bites(mocks: RecordingMocks) -> None:
    """A misspelt field, as a dict input would let through to the API server, is reported."""
    mocks.use_env("local")
    mocks.build()
    quota = plain(dict(mocks.of_type("kubernetes:core/v1:ResourceQuota")[0].inputs))
    quota["spec"]["hardLimits"] = quota["spec"].pop("hard")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(quota, K8S_VERSION, strict=True)
