"""Issue 18 item 8: each team's secrets scope. Run stacks used to read the platform stack with the
platform's passphrase, so whoever could deploy a run could decrypt the admin kubeconfig and every
team's token. A scope holds one team's credential, encrypted with that team's passphrase; the
recording CLI below refuses to open a stack with any other passphrase, as the Pulumi CLI does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.infra.test_deploy import (
    PLATFORM,
    RUN_FILE,
    SCOPES,
    RecordingPulumi,
)
from tests.infra.test_deploy import home as home
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


def test_a_scope_holds_its_teams_credential_and_nothing_else_secret() -> None:
    from trainstack.deploy.scope import scope_outputs

    scope = scope_outputs(PLATFORM_SHOWN, "vision", "local")
    text = json.dumps(scope)
    assert "token-of-nlp" not in text and "QURNSU4=" not in text
    assert scope["kubeconfig"] == "token: token-of-vision"
    assert scope["teamKubeconfigs"] == {"team-vision": "token: token-of-vision"}
    assert scope["namespaces"] == PLATFORM_SHOWN["namespaces"]  # names only: not secret
    with pytest.raises(UserError, match="no team 'ml'"):
        scope_outputs(PLATFORM_SHOWN, "ml", "local")


def test_the_scope_program_keeps_the_credential_secret(mocks: Any) -> None:
    from trainstack.deploy.scope import scope_outputs, scope_program

    exported = mocks.run(lambda: scope_program(scope_outputs(PLATFORM_SHOWN, "vision", "local")))
    assert mocks.resolve(exported["kubeconfig"]) == ("token: token-of-vision", True)
    assert mocks.resolve(exported["teamKubeconfigs"])[1] is True
    assert mocks.resolve(exported["namespaces"])[1] is False


def publish_cli() -> RecordingPulumi:
    shown = dict(PLATFORM_SHOWN)
    return RecordingPulumi(platform=shown, passphrases={PLATFORM: ADMIN})


def test_publish_reads_the_platform_as_admin_and_writes_the_scope_with_the_teams_passphrase(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trainstack.deploy import scope
    from trainstack.deploy.settings import load_settings

    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", ADMIN)
    cli = publish_cli()
    name = scope.publish(
        "local", "vision", command=cli, settings=load_settings(home), passphrase=VISION
    )
    assert name == SCOPE_VISION
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
    cli = publish_cli()
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
    from trainstack.deploy.scope import scope_outputs
    from trainstack.deploy.settings import load_settings

    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", VISION)
    scope_nlp = SCOPES + "local.nlp"
    cli = RecordingPulumi(
        platform=PLATFORM_SHOWN,
        passphrases={PLATFORM: ADMIN, SCOPE_VISION: VISION, scope_nlp: NLP},
        scopes={
            SCOPE_VISION: scope_outputs(PLATFORM_SHOWN, "vision", "local"),
            scope_nlp: scope_outputs(PLATFORM_SHOWN, "nlp", "local"),
        },
    )
    settings = load_settings(home)
    mine = read_stack_outputs(settings, SCOPE_VISION, "local", cli, show_secrets=True)
    assert mine["kubeconfig"] == "token: token-of-vision"
    with pytest.raises(ConfigError, match="another passphrase"):
        read_stack_outputs(settings, PLATFORM, "local", cli, show_secrets=True)
    with pytest.raises(ConfigError, match="does not open"):
        read_stack_outputs(settings, scope_nlp, "local", cli, show_secrets=True)


def test_a_team_deploys_from_its_scope_without_the_platforms_passphrase(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from trainstack.deploy.scope import scope_outputs
    from trainstack.deploy.service import deploy as deploy_file

    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", VISION)
    cli = RecordingPulumi(
        platform=PLATFORM_SHOWN,
        passphrases={PLATFORM: ADMIN, SCOPE_VISION: VISION},
        scopes={SCOPE_VISION: scope_outputs(PLATFORM_SHOWN, "vision", "local")},
    )
    entry = deploy_file(RUN_FILE, "local", command=cli, home=home)
    assert entry.stack == "local.team-vision.mnist-baseline-01"
    stacks_read = [c[c.index("--stack") + 1] for c in cli.calls if c[:2] == ["stack", "output"]]
    assert PLATFORM not in stacks_read and SCOPE_VISION in stacks_read
    # the run stack's StackReference names the scope, not the platform
    config = [c for c in cli.calls if c[:2] == ["config", "set-all"]]
    assert config and any(SCOPE_VISION in " ".join(c) for c in config)
    assert "token-of" not in json.dumps(entry.outputs)
