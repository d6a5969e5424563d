"""Each team's secrets scope. Run stacks used to read the platform stack with the
platform's passphrase, so whoever could deploy a run could decrypt the admin kubeconfig and every
team's token. A scope holds one team's credential, encrypted with that team's passphrase; the
recording CLI below refuses to open a stack with any other passphrase, as the Pulumi CLI does."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.test_cluster import RecordedAPI, kubeconfig
from tests.deploy.test_cluster import api as api
from tests.deploy.test_deploy import (
    PLATFORM,
    RUN_FILE,
    SCOPES,
    RecordingPulumi,
)
from tests.deploy.test_deploy import home as home
from trainstack.errors import ConfigError, UserError

ADMIN = "the-platform-passphrase"
VISION = "vision-team-passphrase"
NLP = "nlp-team-passphrase"
ADMIN_KUBECONFIG = "apiVersion: v1\nusers: [{name: admin, user: {client-key-data: QURNSU4=}}]\n"
PLATFORM_SHOWN = {  # the platform's outputs as `stack output --show-secrets` gives them
    "mode": "kubeconfig",
    "kubeconfig": ADMIN_KUBECONFIG,
    "kubeContext": "kind-x",
    "namespaces": {"vision": "team-vision", "nlp": "team-nlp"},
    "teamKubeconfigs": {"team-vision": "token: token-of-vision", "team-nlp": "token: token-of-nlp"},
    "pullSecretName": "trainstack-registry",
    "kubedlVersion": "v0.5.0",
    "ossAuth": {"type": "secret", "secretName": "trainstack-oss"},
}
SCOPE_VISION = SCOPES + "local.vision"
ADMIN_TOKEN = "platform-admin-token"
NS_API = "/api/v1/namespaces/team-vision"
ANCHOR_PATH = f"{NS_API}/secrets/trainstack-runner-scope"
TOKEN_PATH = f"{NS_API}/serviceaccounts/trainstack-runner/token"
GRANTED = "2031-05-06T07:08:09Z"  # what the API server answers: the expiry it granted
IN_A_WEEK = (datetime.now(UTC) + timedelta(days=7)).strftime("%Y-%m-%dT%H:%M:%SZ")


def scope_of(team: str, expires: str = IN_A_WEEK, **token: Any) -> dict[str, Any]:
    """A scope as publish writes it, holding a bound token of ``team`` expiring at ``expires``
    (``token`` replaces the ``teamToken`` record's fields)."""
    from trainstack.deploy.scope import scope_outputs

    namespace = f"team-{team}"
    record = {"team": team, "namespace": namespace, "expires": expires, **token}
    return scope_outputs(PLATFORM_SHOWN, team, "local", f"token: bound-token-of-{team}", record)


def test_a_scope_holds_its_teams_credential_and_nothing_else_secret() -> None:
    from trainstack.deploy.scope import team_namespace

    scope = scope_of("vision")
    text = json.dumps(scope)
    assert "token-of-nlp" not in text and "QURNSU4=" not in text
    assert "token-of-vision" not in text.replace("bound-token-of-vision", "")  # no legacy token
    assert scope["kubeconfig"] == "token: bound-token-of-vision"
    assert scope["teamKubeconfigs"] == {"team-vision": "token: bound-token-of-vision"}
    assert scope["teamToken"]["expires"] == IN_A_WEEK
    assert scope["namespaces"] == PLATFORM_SHOWN["namespaces"]  # names only: not secret
    with pytest.raises(UserError, match="no team 'ml'"):
        team_namespace(PLATFORM_SHOWN, "ml", "local")


def test_the_scope_program_keeps_the_credential_secret(mocks: Any) -> None:
    from trainstack.deploy.scope import scope_program

    exported = mocks.run(lambda: scope_program(scope_of("vision")))
    assert mocks.resolve(exported["kubeconfig"]) == ("token: bound-token-of-vision", True)
    assert mocks.resolve(exported["teamKubeconfigs"])[1] is True
    assert mocks.resolve(exported["namespaces"])[1] is False
    # when it expires is not a secret: every reader checks it before decrypting anything
    assert mocks.resolve(exported["teamToken"])[1] is False


def admin_platform(api: RecordedAPI, **outputs: Any) -> dict[str, Any]:
    """The platform's outputs (secrets shown), its admin kubeconfig on the recorded API."""
    admin = kubeconfig(api.url, ADMIN_TOKEN)
    return {**PLATFORM_SHOWN, "kubeconfig": admin, "kubeContext": "recorded", **outputs}


def publish_cli(api: RecordedAPI) -> RecordingPulumi:
    return RecordingPulumi(platform=admin_platform(api), passphrases={PLATFORM: ADMIN})


def test_publish_reads_the_platform_as_admin_and_writes_the_scope_with_the_teams_passphrase(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    api: RecordedAPI,
) -> None:
    from trainstack.deploy import scope
    from trainstack.deploy.settings import load_settings

    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", ADMIN)
    cli = publish_cli(serve_token_api(api))
    done = scope.publish(
        "local", "vision", command=cli, settings=load_settings(home), passphrase=VISION
    )
    assert done.stack == SCOPE_VISION
    assert done.expires == GRANTED
    # the scopes project has a folder of its own: the runs project's Pulumi.yaml is untouched
    assert (home / "pulumi-scopes" / "Pulumi.yaml").read_text().count("trainstack-scopes") == 1
    calls = list(zip(cli.calls, cli.envs, strict=True))
    platform = [(c, e) for c, e in calls if PLATFORM in c]
    assert [c for c, _ in platform] == [
        ["stack", "output", "--json", "--stack", PLATFORM, "--show-secrets"]
    ]
    assert platform[0][1]["PULUMI_CONFIG_PASSPHRASE"] == ADMIN
    # everything done to the scope stack is done with the team's passphrase
    ups = [e for c, e in calls if c[0] == "up"]
    assert len(ups) == 1
    assert {e["PULUMI_CONFIG_PASSPHRASE"] for c, e in calls if PLATFORM not in c} == {VISION}


def test_publish_refuses_the_platforms_own_passphrase_for_a_team(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trainstack.deploy import scope
    from trainstack.deploy.settings import load_settings

    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", ADMIN)
    cli = RecordingPulumi(platform=PLATFORM_SHOWN, passphrases={PLATFORM: ADMIN})
    with pytest.raises(ConfigError, match="passphrase is the platform's"):
        scope.publish(
            "local", "vision", command=cli, settings=load_settings(home), passphrase=ADMIN
        )
    assert cli.calls == []


def test_with_a_teams_passphrase_only_its_scope_opens(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a member of team vision can read with its passphrase: its scope; not the platform
    stack (the admin kubeconfig, nlp's token), not nlp's scope."""
    from trainstack.deploy.platform import read_stack_outputs
    from trainstack.deploy.settings import load_settings

    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", VISION)
    scope_nlp = SCOPES + "local.nlp"
    cli = RecordingPulumi(
        platform=PLATFORM_SHOWN,
        passphrases={PLATFORM: ADMIN, SCOPE_VISION: VISION, scope_nlp: NLP},
        scopes={SCOPE_VISION: scope_of("vision"), scope_nlp: scope_of("nlp")},
    )
    settings = load_settings(home)
    mine = read_stack_outputs(settings, SCOPE_VISION, "local", cli, show_secrets=True)
    assert mine["kubeconfig"] == "token: bound-token-of-vision"
    with pytest.raises(ConfigError, match="another passphrase"):
        read_stack_outputs(settings, PLATFORM, "local", cli, show_secrets=True)
    with pytest.raises(ConfigError, match="does not open"):
        read_stack_outputs(settings, scope_nlp, "local", cli, show_secrets=True)


def test_a_team_deploys_from_its_scope_without_the_platforms_passphrase(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trainstack.deploy.service import deploy as deploy_file

    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", VISION)
    cli = RecordingPulumi(
        platform=PLATFORM_SHOWN,
        passphrases={PLATFORM: ADMIN, SCOPE_VISION: VISION},
        scopes={SCOPE_VISION: scope_of("vision")},
    )
    entry = deploy_file(RUN_FILE, "local", command=cli, home=home)
    assert entry.stack == "local.team-vision.mnist-baseline-01"
    stacks_read = [c[c.index("--stack") + 1] for c in cli.calls if c[:2] == ["stack", "output"]]
    assert PLATFORM not in stacks_read and SCOPE_VISION in stacks_read
    # the run stack's StackReference names the scope, not the platform
    (update,) = cli.updates[entry.stack]
    assert update["config"]["trainstack-runs:platformStack"]["value"] == SCOPE_VISION
    assert cli.tags[entry.stack]["trainstack:source"] == SCOPE_VISION
    assert "token-of" not in json.dumps(entry.outputs)


# --- the team's bound, expiring token ----------------------------------------------------------


def serve_token_api(api: RecordedAPI, uid: str = "anchor-uid-1") -> RecordedAPI:
    """The API server's answers to publish: the anchor Secret created with its uid, a token
    issued with the expiry the server granted."""
    created = {"kind": "Secret", "metadata": {"name": "trainstack-runner-scope", "uid": uid}}
    api.serve(f"POST {NS_API}/secrets", (201, json.dumps(created).encode()))
    issued = {
        "kind": "TokenRequest",
        "status": {"token": "bound-token-of-vision", "expirationTimestamp": GRANTED},
    }
    api.serve(f"POST {TOKEN_PATH}", (201, json.dumps(issued).encode()))
    return api


def test_publish_mints_a_bound_token_through_the_token_request_api(api: RecordedAPI) -> None:
    from trainstack.deploy.scope import mint_scope

    serve_token_api(api)
    platform = admin_platform(api)
    scope, minted, hours = mint_scope(platform, "vision", "local")
    # the previous anchor deleted (revoking its token), a new one created, a token bound to it
    assert [(m, p) for m, p, _, _ in api.writes] == [
        ("DELETE", ANCHOR_PATH),
        ("POST", f"{NS_API}/secrets"),
        ("POST", TOKEN_PATH),
    ]
    assert {auth for *_, auth in api.writes} == {f"Bearer {ADMIN_TOKEN}"}  # as the admin
    _, _, anchor, _ = api.writes[1]
    assert anchor["metadata"]["name"] == "trainstack-runner-scope" and "data" not in anchor
    _, _, request, _ = api.writes[2]
    assert request["kind"] == "TokenRequest"
    assert request["spec"]["expirationSeconds"] == 168 * 3600  # the default: a week
    assert request["spec"]["boundObjectRef"] == {
        "apiVersion": "v1",
        "kind": "Secret",
        "name": "trainstack-runner-scope",
        "uid": "anchor-uid-1",
    }
    assert "audiences" not in request["spec"]  # the API server's own
    assert (minted.token, hours) == ("bound-token-of-vision", 168)
    # the scope's kubeconfig carries the bound token on the platform's endpoint, nothing else
    config = yaml.safe_load(scope["kubeconfig"])
    (user,) = config["users"]
    assert user["user"] == {"token": "bound-token-of-vision"}
    assert config["clusters"][0]["cluster"]["server"] == api.url
    assert config["contexts"][0]["context"]["namespace"] == "team-vision"
    assert scope["teamKubeconfigs"] == {"team-vision": scope["kubeconfig"]}
    text = json.dumps(scope)
    assert "token-of-vision" not in text.replace("bound-token-of-vision", "")  # no legacy token
    assert ADMIN_TOKEN not in text and "token-of-nlp" not in text


def test_the_scope_records_the_expiry_the_api_server_granted_not_the_one_asked(
    api: RecordedAPI,
) -> None:
    """The API server shortens a request past --service-account-max-token-expiration (with a
    warning); what it answers in status.expirationTimestamp is when the token dies."""
    from trainstack.deploy.scope import mint_scope

    serve_token_api(api)
    # a JSON number, as `stack output --json` may print it
    platform = admin_platform(api, teamTokenHours=720.0)
    scope, minted, hours = mint_scope(platform, "vision", "local")
    assert api.writes[2][2]["spec"]["expirationSeconds"] == 720 * 3600
    assert scope["teamToken"] == {
        "team": "vision",
        "namespace": "team-vision",
        "serviceAccount": "team-vision/trainstack-runner",
        "expires": GRANTED,
    }
    assert (minted.expires, hours) == (GRANTED, 720)


@pytest.mark.parametrize(
    "status",
    [
        {"token": "", "expirationTimestamp": GRANTED},
        {"token": "t", "expirationTimestamp": "next week"},
        {"token": "t"},
        {"token": 7, "expirationTimestamp": GRANTED},
    ],
)
def test_an_odd_token_answer_is_one_clear_error(api: RecordedAPI, status: dict[str, Any]) -> None:
    from trainstack.deploy.clustererror import ClusterError
    from trainstack.deploy.scope import mint_scope

    serve_token_api(api)
    api.serve(f"POST {TOKEN_PATH}", (201, json.dumps({"status": status}).encode()))
    platform = admin_platform(api)
    with pytest.raises(ClusterError, match="a token for ServiceAccount team-vision/trainstack-run"):
        mint_scope(platform, "vision", "local")


@pytest.mark.parametrize("hours", [0, -1, 9000, 1.5, "168", True])
def test_a_bad_token_lifetime_from_the_platform_is_refused(hours: Any) -> None:
    from trainstack.deploy.scope import token_hours

    with pytest.raises(UserError, match="teamTokenHours"):
        token_hours({**PLATFORM_SHOWN, "teamTokenHours": hours}, "local")


def test_publishing_again_revokes_the_previous_token(api: RecordedAPI) -> None:
    """Each publish binds its token to a new anchor Secret after deleting the old one: the API
    server accepts a bound token only while the very object (its uid) it names exists."""
    from trainstack.deploy.scope import mint_scope

    platform = admin_platform(api)
    serve_token_api(api, uid="anchor-uid-1")
    mint_scope(platform, "vision", "local")
    serve_token_api(api, uid="anchor-uid-2")
    mint_scope(platform, "vision", "local")
    second = api.writes[3:]
    assert (second[0][0], second[0][1]) == ("DELETE", ANCHOR_PATH)
    assert second[2][2]["spec"]["boundObjectRef"]["uid"] == "anchor-uid-2"


def deployed_from(scope: dict[str, Any], home: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A run of team vision deployed from a fresh scope, which then becomes ``scope``."""
    from trainstack.deploy.service import deploy as deploy_file

    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", VISION)
    cli = RecordingPulumi(
        platform=PLATFORM_SHOWN,
        passphrases={PLATFORM: ADMIN, SCOPE_VISION: VISION},
        scopes={SCOPE_VISION: scope_of("vision")},
    )
    deploy_file(RUN_FILE, "local", command=cli, home=home)
    cli.scopes[SCOPE_VISION] = scope
    cli.calls.clear()
    return cli


EXPIRED = "2020-01-02T03:04:05Z"
RENEW = "trainstack scope publish --env local --team vision"


def test_an_expired_scope_is_refused_by_deploy_before_anything_is_created(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.deploy.service import deploy as deploy_file

    cli = deployed_from(scope_of("vision", EXPIRED), home, monkeypatch)
    with pytest.raises(UserError) as refused:
        deploy_file(RUN_FILE, "local", command=cli, home=home)
    text = refused.value.render()
    assert "team vision's credential" in text and "expired at 2020-01-02 03:04 UTC" in text
    assert f"`{RENEW}`" in text
    assert not [c for c in cli.calls if c[0] == "up"]


def test_an_expired_scope_is_refused_by_status_wait_logs_and_destroy(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.deploy import service

    cli = deployed_from(scope_of("vision", EXPIRED), home, monkeypatch)
    found = service.locate("mnist-baseline-01", command=cli, home=home)
    with pytest.raises(UserError) as refused:
        service.live(found)  # status, wait and logs reach the cluster through this one door
    assert "expired at" in refused.value.message and RENEW in str(refused.value.hint)
    with pytest.raises(UserError) as refused:
        service.destroy("mnist-baseline-01", command=cli, home=home)
    assert "expired at" in refused.value.message and RENEW in str(refused.value.hint)
    assert not [c for c in cli.calls if c[0] == "destroy"]


def test_a_scope_close_to_expiry_warns_and_is_used(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainstack.deploy.service import deploy as deploy_file

    soon = (datetime.now(UTC) + timedelta(hours=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    cli = deployed_from(scope_of("vision", soon), home, monkeypatch)
    capsys.readouterr()
    deploy_file(RUN_FILE, "local", command=cli, home=home, rerun=True)
    err = capsys.readouterr().err
    assert "warning: team vision's credential" in err and "expires at" in err
    assert f"`{RENEW}`" in err and "(in 4h5" in err
    assert [c for c in cli.calls if c[0] == "up"]


def test_a_scope_a_week_from_expiry_says_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    from trainstack.deploy.scopetoken import check_scope

    check_scope(scope_of("vision"), env="local", stack=SCOPE_VISION, team="vision")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("record", "why"),
    [
        ({"expires": "soon"}, "teamToken.expires is not an RFC 3339 time"),
        ({"expires": 17}, "teamToken.expires is not an RFC 3339 time"),
        ({"expires": "2031-05-06T07:08:09"}, "not an RFC 3339 time"),  # no zone: not RFC 3339
        ({"expires": "x" * 10_000}, "not an RFC 3339 time"),
        ("damaged", "not an RFC 3339 time"),
        (None, "no teamToken output: published before scopes held expiring tokens"),
    ],
)
def test_an_unknown_expiry_is_one_warning_never_a_traceback(
    record: Any, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from trainstack.deploy.scopetoken import check_scope

    scope = scope_of("vision")
    if record is None:
        del scope["teamToken"]
    elif isinstance(record, dict):
        scope["teamToken"] = {**scope["teamToken"], **record}
    else:
        scope["teamToken"] = record
    check_scope(scope, env="local", stack=SCOPE_VISION, team="vision")
    err = capsys.readouterr().err
    assert err.count("warning:") == 1
    assert "does not say when its credential expires" in err and why in err
    assert RENEW in err


def test_a_refused_scope_token_names_the_publish_that_renews_it(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainstack.deploy.platform import cluster_access
    from trainstack.deploy.settings import load_settings

    cli = deployed_from(scope_of("vision"), home, monkeypatch)
    access = cluster_access(
        load_settings(home), "local", "team-vision", cli, SCOPE_VISION, "vision"
    )
    assert access.kubeconfig == "token: bound-token-of-vision"
    assert RENEW in access.renew


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("namespaces", ["team-vision"], "exports namespaces as a list, not an object of teams"),
        ("namespaces", "team-vision", "exports namespaces as a str, not an object of teams"),
        ("teamMaxPriority", {"vision": "high"}, "exports teamMaxPriority as holding 'high'"),
    ],
)
def test_platform_outputs_of_another_shape_are_one_clear_error(
    key: str, value: object, message: str
) -> None:
    """Another trainstack version's outputs (a list where an object is read) were a TypeError
    traceback in `scope publish`, `deploy` and `plan`."""
    from trainstack.deploy.scope import team_namespace

    odd = {**PLATFORM_SHOWN, key: value}
    with pytest.raises(UserError, match=message):
        team_namespace(odd, "vision", "local")
