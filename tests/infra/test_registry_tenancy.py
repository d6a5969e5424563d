"""The registry between teams (trainstack/infra/platform/registry.py).

Until this, every team namespace held ``trainstack-registry``: the ACR instance's login, which
can push, readable with the team's credential (``secrets get``), and every team pulled the shared
repositories by mutable tag, so one team could push an image another team's next run executed
with that team's data mounted. Now on ack the instance's password never enters the cluster: pods
pull with the managed credential helper's pull-only, short-lived tokens, and each team pushes
only into an ACR namespace of its own, through a RAM policy that names that namespace alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.infra.conftest import RecordingMocks
from tests.infra.test_team_access import build
from trainstack.errors import ConfigError
from trainstack.platformnames import ENV_TAG

REPO = Path(__file__).resolve().parents[2]
SECRET = "kubernetes:core/v1:Secret"
ADDON = "alicloud:cs/kubernetesAddon:KubernetesAddon"
POLICY = "alicloud:ram/policy:Policy"
ACR_NAMESPACE = "alicloud:cs/registryEnterpriseNamespace:RegistryEnterpriseNamespace"
PASSWORD = "s3cret-registry-password"  # conftest's READY value


def test_no_team_namespace_holds_the_registry_password_on_ack(mocks: RecordingMocks) -> None:
    build(mocks, "ack-dev")
    namespaces = {"vision", "nlp"}
    in_teams = [
        r for r in mocks.of_type(SECRET) if r.inputs["metadata"].get("namespace") in namespaces
    ]
    assert all(r.inputs.get("type") != "kubernetes.io/dockerconfigjson" for r in in_teams)
    assert PASSWORD not in json.dumps([r.inputs for r in mocks.of_type(SECRET)], default=str)


def test_nodes_pull_through_the_managed_credential_helper(mocks: RecordingMocks) -> None:
    build(mocks, "ack-dev")
    helper = mocks.one(ADDON, "acr-credential-helper")
    assert helper["name"] == "managed-aliyun-acr-credential-helper"
    config = json.loads(helper["config"])
    # the mocks give a resource the id "<name>-id"
    assert config["AcrInstanceInfo"] == [
        {"InstanceId": "acr-instance-id", "regionId": "cn-hangzhou"}
    ]
    # the team namespaces and KubeDL's, never "all" (system namespaces pull their own way)
    assert config["watchNamespace"].split(",") == ["kubedl-system", "nlp", "vision"]
    assert config["serviceAccount"] == "*"


def test_each_team_pushes_only_into_its_own_acr_namespace(mocks: RecordingMocks) -> None:
    outputs = build(mocks, "ack-dev")
    spaces = {r.name: r.inputs["name"] for r in mocks.of_type(ACR_NAMESPACE)}
    assert spaces == {
        "acr-namespace": "acme",
        "acr-namespace-vision": "acme-vision",
        "acr-namespace-nlp": "acme-nlp",
    }
    for team in ("vision", "nlp"):
        policy = mocks.one(POLICY, f"acr-push-{team}")
        document = json.loads(policy["policyDocument"])
        writes = [s for s in document["Statement"] if "cr:PushRepository" in s["Action"]]
        (write,) = writes
        assert write["Resource"], "a push right names its repositories"
        for arn in write["Resource"]:
            path = arn.split(":repository/", 1)[1].split("/")
            assert path[1] == f"acme-{team}", arn  # <instance>/<namespace>[/*]
        for statement in document["Statement"]:
            assert statement["Resource"] != "*" or statement["Action"] == [
                "cr:GetAuthorizationToken"
            ]
    names, _ = mocks.resolve(outputs["teamRegistryPushPolicies"])
    assert sorted(names) == ["nlp", "vision"]
    spaces_out, _ = mocks.resolve(outputs["teamRegistryNamespaces"])
    assert spaces_out == {"vision": "acme-vision", "nlp": "acme-nlp"}


def _ack_runs() -> list[Path]:
    from trainstack.spec import load_run

    return [
        p
        for p in sorted(REPO.glob("components/*/runs/*.yaml"))
        if load_run(p).tags.get(ENV_TAG) == "ack-dev"
    ]


@pytest.mark.parametrize("path", _ack_runs(), ids=lambda p: f"{p.parents[1].name}/{p.name}")
def test_pods_rendered_for_ack_name_no_pull_secret(mocks: RecordingMocks, path: Path) -> None:
    """The credential helper attaches its Secret to the namespace's ServiceAccounts, and does
    not work beside a workload's own imagePullSecrets (ACK, "Pull images without a secret")."""
    from tests.kubedl.expand import expand
    from trainstack.infra.run.rendered import for_environment
    from trainstack.render import render_run
    from trainstack.spec import load_run

    outputs = build(mocks, "ack-dev")
    settled = {k: mocks.resolve(v)[0] for k, v in outputs.items()}
    assert settled["pullSecretName"] == ""
    completed, options = for_environment(settled, load_run(path), "ack-dev")
    pods = expand(render_run(completed, options=options)).pods
    assert pods and all("imagePullSecrets" not in p.spec for p in pods)


def test_a_registry_namespace_too_long_for_a_teams_namespace_is_refused(
    mocks: RecordingMocks,
) -> None:
    with pytest.raises(ConfigError) as err:
        build(mocks, "ack-dev", **{"trainstack:registryNamespace": "a" * 26})
    assert "trainstack:registryNamespace" in err.value.render()
    assert "team 'vision'" in err.value.render()


def test_an_external_registry_keeps_its_pull_secret(mocks: Any) -> None:
    """A registry trainstack does not create has no credential helper: its pull secret stays,
    and docs/tenancy.md says it must be a pull-only robot's."""
    outputs = build(mocks, "local")
    pull = [
        r.inputs["metadata"]["namespace"]
        for r in mocks.of_type(SECRET)
        if r.inputs.get("type") == "kubernetes.io/dockerconfigjson"
    ]
    assert sorted(pull) == ["nlp", "vision"]
    assert mocks.resolve(outputs["pullSecretName"])[0] == "trainstack-registry"
