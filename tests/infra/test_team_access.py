"""The platform exports ``teamKubeconfigs``, credentials scoped to
each team namespace (a ServiceAccount token and a namespaced Role), so run stacks no longer hold
the admin kubeconfig. At 29fa4ef the platform exported no such output: every run stack used the
cluster-admin kubeconfig."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.infra.conftest import FAKE_CA
from trainstack import platformnames as names

ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
CLUSTER_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
SECRET = "kubernetes:core/v1:Secret"


def build(mocks: Any, env: str, **overrides: str) -> dict[str, Any]:
    mocks.use_env(env, **overrides)
    return mocks.build()  # type: ignore[no-any-return]


def allows(rules: list[dict[str, Any]], group: str, resource: str, verb: str) -> bool:
    return any(
        group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in rules
    )


def test_ack_exports_a_secret_kubeconfig_per_team_namespace(mocks: Any) -> None:
    outputs = build(mocks, "ack-dev")
    configs, secret = mocks.resolve(outputs[names.OUT_TEAM_KUBECONFIGS])
    assert secret, "teamKubeconfigs holds tokens: a secret output, encrypted in state"
    assert sorted(configs) == ["nlp", "vision"]
    for namespace, text in configs.items():
        doc = yaml.safe_load(text)
        (cluster,) = doc["clusters"]
        # the cluster's endpoint and CA from the admin credential, but not its client key
        assert cluster["cluster"] == {
            "server": "https://47.96.0.10:6443",
            "certificate-authority-data": FAKE_CA,
        }
        (user,) = doc["users"]
        assert user["user"] == {"token": f"token-of-{namespace}"}
        (context,) = doc["contexts"]
        assert context["context"]["namespace"] == namespace
        assert doc["current-context"] == context["name"]
        assert "QURNSU4" not in text
    _, admin_secret = mocks.resolve(outputs[names.OUT_KUBECONFIG])
    assert admin_secret


def test_each_team_gets_an_account_a_role_a_binding_and_a_token(mocks: Any) -> None:
    build(mocks, "local")
    for namespace in ("vision", "nlp"):
        (account,) = [
            r.inputs
            for r in mocks.of_type("kubernetes:core/v1:ServiceAccount")
            if r.inputs["metadata"].get("namespace") == namespace
            and r.inputs["metadata"]["name"] == "trainstack-runner"
        ]
        (token,) = [
            r.inputs
            for r in mocks.of_type(SECRET)
            if r.inputs["metadata"]
            == {**r.inputs["metadata"], "namespace": namespace, "name": "trainstack-runner-token"}
        ]
        assert token["type"] == "kubernetes.io/service-account-token"
        assert token["metadata"]["annotations"] == {
            "kubernetes.io/service-account.name": account["metadata"]["name"]
        }
        (binding,) = [
            r.inputs
            for r in mocks.of_type(BINDING)
            if r.inputs["metadata"]["namespace"] == namespace
        ]
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": "trainstack-runner",
        }
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "trainstack-runner", "namespace": namespace}
        ]


def test_the_role_covers_what_a_run_stack_creates_and_nothing_cluster_wide(mocks: Any) -> None:
    from trainstack.infra.run.program import _TYPED
    from trainstack.render.context import EXEC_RULES

    build(mocks, "local")
    roles = [r.inputs for r in mocks.of_type(ROLE)]
    assert len(roles) == 2
    rules = roles[0]["rules"]
    # every built-in kind the run program registers, except cluster-scoped PersistentVolumes
    for api_version, kind in _TYPED:
        group = api_version.split("/")[0] if "/" in api_version else ""
        plural = {
            "ServiceAccount": "serviceaccounts",
            "PersistentVolumeClaim": "persistentvolumeclaims",
            "ConfigMap": "configmaps",
            "Secret": "secrets",
            "Service": "services",
            "Job": "jobs",
            "Role": "roles",
            "RoleBinding": "rolebindings",
            "PersistentVolume": None,
        }[kind]
        if plural is None:
            continue
        for verb in ("create", "get", "patch", "delete"):
            assert allows(rules, group, plural, verb), (kind, verb)
    # every enabled KubeDL kind of Pulumi.local.yaml
    for group, plural in (
        ("training.kubedl.io", "pytorchjobs"),
        ("training.kubedl.io", "tfjobs"),
        ("training.kubedl.io", "xgboostjobs"),
        ("training.kubedl.io", "mpijobs"),
        ("inference.kubedl.io", "elasticbatchjobs"),
    ):
        assert allows(rules, group, plural, "create") and allows(rules, group, plural, "delete")
    assert not allows(rules, "training.kubedl.io", "marsjobs", "create")  # not enabled
    # status, logs, wait
    for resource in ("pods", "pods/log", "events"):
        assert allows(rules, "", resource, "list") or resource == "pods/log"
        assert allows(rules, "", resource, "get")
    # Kubernetes refuses a Role granting more than its creator holds: the MPI launcher's rules
    for rule in EXEC_RULES:
        for resource in rule["resources"]:
            assert all(allows(rules, "", resource, v) for v in rule["verbs"]), resource
    assert not allows(rules, "", "nodes", "get") and not allows(rules, "", "namespaces", "get")
    assert not any("*" in r["verbs"] or "*" in r["resources"] for r in rules)


def test_persistent_volumes_are_the_one_cluster_wide_right(mocks: Any) -> None:
    build(mocks, "local")
    (role,) = [
        r.inputs
        for r in mocks.of_type(CLUSTER_ROLE)
        if r.inputs["metadata"]["name"] == "trainstack-runner-volumes"
    ]
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["persistentvolumes"],
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        }
    ]
    bindings = {
        r.inputs["subjects"][0]["namespace"]: r.inputs
        for r in mocks.of_type(CLUSTER_BINDING)
        if r.inputs["roleRef"]["name"] == "trainstack-runner-volumes"
    }
    assert sorted(bindings) == ["nlp", "vision"]
    assert all(b["subjects"][0]["name"] == "trainstack-runner" for b in bindings.values())


def test_kubeconfig_mode_reads_the_endpoint_of_the_configured_context(
    mocks: Any, tmp_path: Path
) -> None:
    """kind: the CA is a file next to the kubeconfig; the scoped kubeconfig embeds it."""
    (tmp_path / "ca.crt").write_bytes(b"KIND-CA")
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "other",
                "clusters": [
                    {
                        "name": "kind-trainstack",
                        "cluster": {
                            "server": "https://127.0.0.1:40123",
                            "certificate-authority": "ca.crt",
                        },
                    },
                    {"name": "other", "cluster": {"server": "https://10.0.0.1"}},
                ],
                "contexts": [
                    {
                        "name": "kind-trainstack",
                        "context": {"cluster": "kind-trainstack", "user": "kind"},
                    },
                    {"name": "other", "context": {"cluster": "other", "user": "o"}},
                ],
                "users": [{"name": "kind", "user": {"token": "ADMIN-TOKEN"}}],
            }
        )
    )
    outputs = build(mocks, "local", **{"trainstack:kubeconfig": str(kubeconfig)})
    configs, secret = mocks.resolve(outputs[names.OUT_TEAM_KUBECONFIGS])
    assert secret and sorted(configs) == ["nlp", "vision"]
    doc = yaml.safe_load(configs["vision"])
    assert doc["clusters"][0]["cluster"] == {
        "server": "https://127.0.0.1:40123",
        "certificate-authority-data": base64.b64encode(b"KIND-CA").decode(),
    }
    assert doc["users"][0]["user"] == {"token": "token-of-vision"}
    assert "ADMIN-TOKEN" not in configs["vision"]


def test_without_a_readable_kubeconfig_no_team_credentials_are_exported(
    mocks: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run stacks then fall back to the admin kubeconfig (trainstack.infra.run.program)."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    outputs = build(mocks, "local")
    configs, secret = mocks.resolve(outputs[names.OUT_TEAM_KUBECONFIGS])
    assert configs == {} and secret


def test_kubeconfig_given_as_contents_is_read_as_such(mocks: Any) -> None:
    """trainstack:kubeconfig may hold the file's text, not only a path."""
    admin = yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "c",
            "clusters": [{"name": "k", "cluster": {"server": "https://k:6443"}}],
            "contexts": [{"name": "c", "context": {"cluster": "k"}}],
        }
    )
    outputs = build(
        mocks, "local", **{"trainstack:kubeconfig": admin, "trainstack:kubeContext": "c"}
    )
    configs, _ = mocks.resolve(outputs[names.OUT_TEAM_KUBECONFIGS])
    assert yaml.safe_load(configs["nlp"])["clusters"][0]["cluster"] == {"server": "https://k:6443"}


def test_endpoint_of_picks_the_context_and_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    from trainstack.infra.platform.teamaccess import Endpoint, endpoint_of

    text = yaml.safe_dump(
        {
            "current-context": "b",
            "clusters": [
                {
                    "name": "ca",
                    "cluster": {"server": "https://a", "insecure-skip-tls-verify": True},
                },
                {
                    "name": "cb",
                    "cluster": {"server": "https://b", "certificate-authority-data": "Q0E="},
                },
            ],
            "contexts": [
                {"name": "a", "context": {"cluster": "ca"}},
                {"name": "b", "context": {"cluster": "cb"}},
            ],
        }
    )
    assert endpoint_of(text) == Endpoint("https://b", "Q0E=")
    assert endpoint_of(text, "a") == Endpoint("https://a", None, insecure=True)
    assert endpoint_of("clusters: []\n") is None
    assert endpoint_of("{not yaml") is None
    missing_ca = yaml.safe_dump(
        {
            "clusters": [
                {
                    "name": "x",
                    "cluster": {"server": "https://x", "certificate-authority": "nope.crt"},
                }
            ]
        }
    )
    assert endpoint_of(missing_ca, base=tmp_path) is None


@pytest.mark.parametrize("group", ["scheduling.sigs.k8s.io", "scheduling.volcano.sh"])
def test_a_team_may_read_its_jobs_podgroups(mocks: Any, group: str) -> None:
    """status and wait say why a gang waits from its PodGroup (deploy/waiting.py): with a team's
    credentials that read was forbidden, so the reason was silently missing."""
    build(mocks, "local")
    role = next(r.inputs for r in mocks.of_type("kubernetes:rbac.authorization.k8s.io/v1:Role"))
    assert allows(role["rules"], group, "podgroups", "get")
    assert not allows(role["rules"], group, "podgroups", "create")


def test_legacy_team_tokens_false_drops_the_token_secrets_and_team_kubeconfigs(
    mocks: Any,
) -> None:
    """A platform whose every team deploys from a published scope (bound, expiring tokens that
    `trainstack scope publish` mints) keeps no non-expiring token in the cluster or in state."""
    outputs = build(mocks, "ack-dev", **{"trainstack:legacyTeamTokens": "false"})
    assert names.OUT_TEAM_KUBECONFIGS not in outputs
    assert not [
        r
        for r in mocks.of_type(SECRET)
        if r.inputs.get("type") == "kubernetes.io/service-account-token"
    ]
    # the accounts, their roles and guards stay: the scopes' tokens log in as them
    accounts = mocks.of_type("kubernetes:core/v1:ServiceAccount")
    assert {r.inputs["metadata"]["namespace"] for r in accounts} >= {"vision", "nlp"}
    assert mocks.resolve(outputs[names.OUT_TEAM_TOKEN_HOURS])[0] == 168


def test_by_default_the_legacy_tokens_stay_and_the_token_lifetime_is_exported(
    mocks: Any,
) -> None:
    outputs = build(mocks, "local", **{"trainstack:teamTokenHours": "24"})
    assert names.OUT_TEAM_KUBECONFIGS in outputs
    assert mocks.resolve(outputs[names.OUT_TEAM_TOKEN_HOURS])[0] == 24


@pytest.mark.parametrize("hours", ["0", "8761", "a week"])
def test_a_team_token_lifetime_outside_one_hour_to_a_year_is_refused(
    mocks: Any, hours: str
) -> None:
    from trainstack.errors import ConfigError
    from trainstack.infra.platform.config import load

    values = mocks.use_env("local", **{"trainstack:teamTokenHours": hours})
    with pytest.raises(ConfigError, match="teamTokenHours"):
        load(
            values,
            stack="local",
            source="Pulumi.local.yaml",
            secret_keys=frozenset({"trainstack:registryPassword"}),
            offline=True,
        )
