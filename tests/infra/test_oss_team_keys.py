"""kubeconfig mode: an OSS AccessKey per team, whose RAM policy names only ``<bucket>/<team>/``.

The platform used to take one AccessKey and copy it, as Secret ``trainstack-oss``, into every team
namespace, where each team's credential reads it: every team reached whatever that one key
reaches, every other team's prefix included. Now each team's namespace holds only its own key
(``trainstack:ossAccessKeys``), the shared key is refused once there are two teams, and the
policy each key's RAM user needs is derived (``teamOssPolicies``), never hand-written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.infra.conftest import OSS_ENDPOINT, OSS_TEAM_KEYS, oss_key_of, team_oss_keys
from trainstack import platformnames as names
from trainstack.envfile import find_project, read_env
from trainstack.errors import ConfigError
from trainstack.render.storage import OSS_OTHER_OPTS

REPO = Path(__file__).resolve().parents[2]
SECRET = "kubernetes:core/v1:Secret"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
SHARED = {
    "trainstack:ossAccessKeyId": "LTAI5tSharedKeyIdForTests",
    "trainstack:ossAccessKeySecret": "Sh4redSecretForTests0nly",
}
BUCKETS = ["acme-ml-data", "acme-ml-models"]
ONE_TEAM = json.dumps([{"name": "vision", "quota": {"cpu": "16", "memory": "64Gi"}}])
RUN_FILE = REPO / "components/mnist-ddp/runs/baseline.yaml"  # team vision, oss:// bindings


def load_local(kubedl_root: Path, secret: tuple[str, ...], **changes: str) -> Any:
    """Pulumi.local.yaml, set up (a registry password), with ``changes``; ``secret``: which of
    them are secret config."""
    from tests.infra.conftest import READY
    from trainstack.infra.platform.config import load

    cfg = read_env(find_project(REPO), "local")
    values = {**cfg.values, **READY["local"], **changes}
    keys = cfg.secret_keys | {"trainstack:registryPassword", *secret}
    return load(
        values, stack="local", source="Pulumi.local.yaml", secret_keys=keys, root=kubedl_root
    )


def oss_secrets(mocks: Any) -> dict[str, Any]:
    """Namespace -> its trainstack-oss Secret's inputs."""
    return {
        r.inputs["metadata"]["namespace"]: r.inputs
        for r in mocks.of_type(SECRET)
        if r.inputs["metadata"]["name"] == names.OSS_SECRET_NAME
    }


def build(mocks: Any, *teams: str, **overrides: str) -> dict[str, Any]:
    mocks.use_team_keys("local", *teams, **overrides)
    return mocks.build()  # type: ignore[no-any-return]


# --- one key per team ------------------------------------------------------------------------


def test_each_team_namespace_holds_only_its_own_key(mocks: Any) -> None:
    from pulumi.runtime.rpc import is_rpc_secret, unwrap_rpc_secret

    outputs = build(mocks, "vision", "nlp")
    secrets = oss_secrets(mocks)
    assert sorted(secrets) == ["nlp", "vision"]
    for namespace, other in (("vision", "nlp"), ("nlp", "vision")):
        data = secrets[namespace]["stringData"]
        assert is_rpc_secret(data), "encrypted in state, [secret] in every preview"
        own = unwrap_rpc_secret(data)
        assert own == {
            "akId": oss_key_of(namespace)["id"],
            "akSecret": oss_key_of(namespace)["secret"],
        }
        assert not set(oss_key_of(other).values()) & set(own.values())
    auth, secret = mocks.resolve(outputs[names.OUT_OSS_AUTH])
    assert not secret and auth["teams"] == ["nlp", "vision"]


def test_a_team_without_a_key_gets_no_secret_and_its_oss_runs_say_so(mocks: Any) -> None:
    from trainstack.infra.run.options import render_options
    from trainstack.render import RenderError, render_run
    from trainstack.spec import load_run

    outputs = build(mocks, "nlp")
    assert sorted(oss_secrets(mocks)) == ["nlp"]
    settled = {k: mocks.resolve(v)[0] for k, v in outputs.items()}
    assert settled[names.OUT_OSS_AUTH]["teams"] == ["nlp"]
    run = load_run(RUN_FILE)
    with pytest.raises(RenderError) as caught:
        render_run(run, options=render_options(settled, run, "local"))
    assert "team 'vision' of environment 'local' has no OSS credentials" in (
        caught.value.hint or ""
    )
    assert "trainstack:ossAccessKeys.vision.id" in (caught.value.hint or "")
    # vision's volume guard admits no OSS PV at all: it could only name another team's Secret.
    (policy,) = [
        r.inputs["spec"]
        for r in mocks.of_type(POLICY)
        if r.inputs["metadata"]["name"] == "trainstack-team-volumes-vision"
    ]
    oss_rule = next(v for v in policy["validations"] if "OSS PersistentVolume" in v["message"])
    assert oss_rule["expression"].endswith("|| (false)")
    assert "credentials: none: team vision has no OSS AccessKey" in oss_rule["message"]


def test_the_shared_key_with_two_teams_is_one_error_naming_the_key_and_the_fix(
    kubedl_root: Path,
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_local(kubedl_root, tuple(SHARED), **SHARED, **{"trainstack:ossEndpoint": OSS_ENDPOINT})
    message, hint = caught.value.message, caught.value.hint or ""
    assert message.startswith("Pulumi.local.yaml: trainstack:ossAccessKeyId: expected an AccessKey")
    assert "per team (trainstack:ossAccessKeys)" in message and "(vision, nlp)" in message
    for team in ("vision", "nlp"):
        for field in ("id", "secret"):
            command = (
                f"pulumi config set --secret --path 'trainstack:ossAccessKeys.{team}.{field}' "
                f"<{field}> --stack local"
            )
            assert command in hint
    assert "pulumi config rm trainstack:ossAccessKeyId --stack local" in hint
    assert "teamOssPolicies" in hint
    for value in SHARED.values():  # a secret's value is never shown
        assert value not in message + hint


def test_with_one_team_the_shared_key_still_works(mocks: Any) -> None:
    from pulumi.runtime.rpc import unwrap_rpc_secret

    values = mocks.use_env(
        "local",
        **SHARED,
        **{"trainstack:ossEndpoint": OSS_ENDPOINT, "trainstack:teams": ONE_TEAM},
    )
    mocks.configure(values, ["trainstack:registryPassword", *SHARED])
    mocks.build()
    secrets = oss_secrets(mocks)
    assert list(secrets) == ["vision"]
    assert unwrap_rpc_secret(secrets["vision"]["stringData"]) == {
        "akId": SHARED["trainstack:ossAccessKeyId"],
        "akSecret": SHARED["trainstack:ossAccessKeySecret"],
    }


def test_the_shared_key_and_team_keys_together_are_refused(kubedl_root: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_local(
            kubedl_root,
            (*SHARED, OSS_TEAM_KEYS),
            **SHARED,
            **team_oss_keys("vision"),
            **{"trainstack:teams": ONE_TEAM},
        )
    assert "both are set" in caught.value.message
    assert "pulumi config rm trainstack:ossAccessKeyId" in (caught.value.hint or "")


@pytest.mark.parametrize(
    ("keys", "needle"),
    [
        ({"vison": oss_key_of("vision")}, "trainstack:ossAccessKeys.vison: unknown key"),
        ({"vision": {"id": oss_key_of("vision")["id"]}}, "ossAccessKeys.vision.secret: expected"),
        ({"vision": {**oss_key_of("vision"), "token": "x"}}, "ossAccessKeys.vision.token: unknown"),
        (
            {"vision": {"id": 7, "secret": "y"}},
            "ossAccessKeys.vision.id: expected an AccessKey's id",
        ),
        ({"vision": "LTAI5tWholeKeyAsText"}, "ossAccessKeys.vision: expected an object"),
    ],
)
def test_a_wrong_team_key_names_the_key_never_the_value(
    kubedl_root: Path, keys: dict[str, Any], needle: str
) -> None:
    changes = {OSS_TEAM_KEYS: json.dumps(keys), "trainstack:ossEndpoint": OSS_ENDPOINT}
    with pytest.raises(ConfigError) as caught:
        load_local(kubedl_root, (OSS_TEAM_KEYS,), **changes)
    text = caught.value.message + (caught.value.hint or "")
    assert needle in text
    for value in [*oss_key_of("vision").values(), "LTAI5tWholeKeyAsText"]:
        assert value not in text


def test_team_keys_in_plain_text_are_refused(kubedl_root: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_local(kubedl_root, (), **team_oss_keys("vision"))
    assert caught.value.message == (
        "Pulumi.local.yaml: trainstack:ossAccessKeys: is set in plain text; it must be a secret"
    )


def test_ack_takes_neither_team_keys_nor_named_buckets(kubedl_root: Path) -> None:
    from tests.infra.conftest import READY
    from trainstack.infra.platform.config import load

    cfg = read_env(find_project(REPO), "ack-dev")
    for changes, needle in (
        (team_oss_keys("vision"), "trainstack:ossAccessKeys: not used when trainstack:mode is ack"),
        ({"trainstack:ossBuckets": json.dumps(BUCKETS)}, "trainstack:ossBuckets: only used when"),
    ):
        values = {**cfg.values, **READY["ack-dev"], **changes}
        keys = cfg.secret_keys | {"trainstack:registryPassword", OSS_TEAM_KEYS}
        with pytest.raises(ConfigError) as caught:
            load(values, stack="ack-dev", source="x", secret_keys=keys, root=kubedl_root)
        assert needle in caught.value.message


# --- the RAM policy each key needs, derived -----------------------------------------------------


def test_team_oss_policies_name_only_the_teams_prefix(mocks: Any) -> None:
    outputs = build(mocks, "vision", "nlp", **{"trainstack:ossBuckets": json.dumps(BUCKETS)})
    policies, secret = mocks.resolve(outputs[names.OUT_TEAM_OSS_POLICIES])
    assert not secret, "a policy is no secret: the admin attaches it to each team's RAM user"
    assert sorted(policies) == ["nlp", "vision"]
    for team, text in policies.items():
        other = "nlp" if team == "vision" else "vision"
        document = json.loads(text)
        assert document["Version"] == "1"
        assert other not in text
        for statement in document["Statement"]:
            assert statement["Effect"] == "Allow"
            resources = statement["Resource"]
            if any(a in statement["Action"] for a in ("oss:GetObject", "oss:PutObject")):
                # objects: only under <bucket>/<team>/
                assert resources == [f"acs:oss:*:*:{b}/{team}/*" for b in BUCKETS]
                assert "oss:DeleteObject" in statement["Action"]
            elif statement["Action"] == ["oss:ListObjects"]:
                # listing: the bucket, but only keys under the team's prefix
                assert resources == [f"acs:oss:*:*:{b}" for b in BUCKETS]
                prefixes = statement["Condition"]["StringLike"]["oss:Prefix"]
                assert prefixes and all(p.startswith(f"{team}/") for p in prefixes)
            else:
                # the bucket's own metadata, no object and no listing
                assert statement["Action"] == ["oss:GetBucketInfo"]
                assert resources == [f"acs:oss:*:*:{b}" for b in BUCKETS]


def test_team_oss_policies_is_the_same_builder_as_acks_team_roles() -> None:
    from trainstack.infra.platform.osspolicy import oss_policy, team_policy

    assert team_policy(BUCKETS, "vision") == oss_policy(BUCKETS, "vision/")


def test_no_policies_without_named_buckets(mocks: Any) -> None:
    outputs = build(mocks, "vision", "nlp")
    assert names.OUT_TEAM_OSS_POLICIES not in outputs


def test_named_buckets_are_pinned_in_each_teams_volume_guard(mocks: Any) -> None:
    from trainstack.infra.platform.volumeguard import GuardShape, TeamVolumes, pv_problem

    build(mocks, "vision", "nlp", **{"trainstack:ossBuckets": json.dumps(BUCKETS)})
    for team in ("vision", "nlp"):
        name = f"trainstack-team-volumes-{team}"
        (params,) = [
            r.inputs for r in mocks.of_type(CONFIG_MAP) if r.inputs["metadata"]["name"] == name
        ]
        data = mocks.resolve(params["data"])[0]
        assert {k for k in data if k.startswith("bucket.")} == {f"bucket.{b}" for b in BUCKETS}
        (policy,) = [
            r.inputs["spec"] for r in mocks.of_type(POLICY) if r.inputs["metadata"]["name"] == name
        ]
        assert any(
            '"bucket." + object.spec.csi.volumeAttributes.bucket' in v["expression"]
            for v in policy["validations"]
        )
    shape = GuardShape.of("vision", "vision", False, names.OSS_SECRET_NAME, named_buckets=True)
    volumes = TeamVolumes(shape, tuple(BUCKETS), None, None, OSS_ENDPOINT)
    spec: dict[str, Any] = {
        "csi": {
            "driver": names.OSS_CSI_DRIVER,
            "volumeHandle": "vision.x",
            "volumeAttributes": {
                "bucket": "someone-elses-bucket",
                "url": OSS_ENDPOINT,
                "path": "/vision/data",
                "otherOpts": OSS_OTHER_OPTS[0],
            },
            "nodePublishSecretRef": {"name": names.OSS_SECRET_NAME, "namespace": "vision"},
        }
    }
    problem = pv_problem(spec, volumes, "vision.x")
    assert problem is not None and problem[0] == "csi.volumeAttributes.bucket"
    spec["csi"]["volumeAttributes"]["bucket"] = BUCKETS[1]
    assert pv_problem(spec, volumes, "vision.x") is None
