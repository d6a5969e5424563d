"""Per-team secrets scopes: what a team's run stacks read, encrypted so only that team opens it.

The platform stack holds every secret of the platform (the admin kubeconfig, each team's token in
``teamKubeconfigs``), encrypted with the platform's passphrase. Run stacks used to reference it
directly, so whoever could deploy a run had to hold that passphrase and could decrypt all of it.

A *scope* is one small stack per team, ``organization/trainstack-scopes/<env>.<team>``, in the same
backend. ``trainstack scope publish`` (run by a platform admin, with the platform's passphrase,
after each ``pulumi up`` that changes outputs, and before the team's token expires) mints the team's
bound, expiring token (deploy/scopetoken.py) and writes into the scope the platform's non-secret
outputs, when that token expires, and exactly one secret, the team's kubeconfig with that token,
encrypted with the *team's* passphrase
(``$TRAINSTACK_TEAM_PASSPHRASE`` at publish; the team's members export it as their
``PULUMI_CONFIG_PASSPHRASE``). Run stacks, ``deploy``, ``status``, ``logs``, ``wait`` and
``destroy`` of that team's runs read the scope instead of the platform stack when it exists, so
a team member needs, and holds, only the team's passphrase: with it the platform stack does not
open, nor does another team's scope. A platform with no scopes published works as before.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainstack import platformnames as names
from trainstack.envnames import SCOPE_STACK_ENV as SCOPE_STACK_ENV
from trainstack.envnames import TEAM_PASSPHRASE_ENV
from trainstack.errors import ConfigError, UserError
from trainstack.infra.platform.inputs import is_kubeconfig_contents
from trainstack.platformnames import SCOPES_PROJECT as SCOPES_PROJECT
from trainstack.platformnames import scope_stack_name as scope_stack_name

if TYPE_CHECKING:
    import pulumi
    from pulumi import automation as auto

    from trainstack.deploy.kube import ClusterAccess
    from trainstack.deploy.scopetoken import Minted
    from trainstack.deploy.settings import DeploySettings

# The platform's secret outputs. A scope carries the team's own part of them and nothing else.
SECRET_OUTPUTS = frozenset({names.OUT_KUBECONFIG, names.OUT_TEAM_KUBECONFIGS})


@dataclass(frozen=True)
class Published:
    """A scope written: its stack, when its token expires (as the API server granted it) and
    how many hours were asked."""

    stack: str
    expires: str
    hours_asked: int


def scope_outputs(
    platform: Mapping[str, Any], team: str, env: str, kubeconfig: str, token: Mapping[str, str]
) -> dict[str, Any]:
    """The scope of ``team`` from the platform's outputs: every non-secret output, the team's
    scoped ``kubeconfig`` (its bound token) as both ``kubeconfig`` and its one
    ``teamKubeconfigs`` entry, and ``token`` (when it expires) as ``teamToken``. The admin
    kubeconfig and every team's legacy token are left out."""
    namespace = team_namespace(platform, team, env)
    out = {k: v for k, v in platform.items() if k not in SECRET_OUTPUTS}
    out[names.OUT_KUBECONFIG] = kubeconfig
    out[names.OUT_KUBE_CONTEXT] = ""
    out[names.OUT_TEAM_KUBECONFIGS] = {namespace: kubeconfig}
    out[names.OUT_TEAM_TOKEN] = dict(token)
    return out


def team_namespace(platform: Mapping[str, Any], team: str, env: str) -> str:
    from trainstack.infra.run.options import PlatformOutputs

    namespaces = PlatformOutputs.read(platform, env).namespaces
    if team not in namespaces:
        known = ", ".join(sorted(namespaces)) or "none"
        raise UserError(f"environment {env!r} has no team {team!r}", hint=f"its teams: {known}")
    return namespaces[team]


def token_hours(platform: Mapping[str, Any], env: str) -> int:
    """``trainstack:teamTokenHours`` as the platform exports it; its default for a platform
    from before that output."""
    from trainstack.infra.platform.config import DEFAULT_TEAM_TOKEN_HOURS, MAX_TEAM_TOKEN_HOURS

    hours = platform.get(names.OUT_TEAM_TOKEN_HOURS, DEFAULT_TEAM_TOKEN_HOURS)
    # JSON numbers may arrive as floats (8.0); a bool is not a number of hours
    whole = isinstance(hours, (int, float)) and not isinstance(hours, bool) and hours == int(hours)
    if not whole or not 1 <= int(hours) <= MAX_TEAM_TOKEN_HOURS:
        raise UserError(
            f"the platform of {env!r} exports {names.OUT_TEAM_TOKEN_HOURS}={hours!r}: expected "
            f"whole hours from 1 to {MAX_TEAM_TOKEN_HOURS}",
            hint="set trainstack:teamTokenHours and `pulumi up` the platform",
        )
    return int(hours)


def team_kubeconfig(platform: Mapping[str, Any], namespace: str, token: str) -> str:
    """A kubeconfig for the team's runner with ``token``, on the cluster the platform's admin
    kubeconfig names (as the platform program builds its legacy ``teamKubeconfigs``)."""
    from trainstack.infra.platform.kubeconfigs import (
        admin_kubeconfig_text,
        endpoint_of,
        scoped_kubeconfig,
    )

    admin = admin_kubeconfig_text(str(platform.get(names.OUT_KUBECONFIG) or "") or None)
    context = str(platform.get(names.OUT_KUBE_CONTEXT) or "") or None
    found = None if admin is None else endpoint_of(admin[0], context, admin[1])
    if found is None:
        raise UserError(
            "the platform's admin kubeconfig names no cluster endpoint to give the team "
            "(its kubeconfig output, else $KUBECONFIG or ~/.kube/config here)",
            hint="run scope publish where the platform's kubeconfig is readable, as for "
            "`pulumi up`",
        )
    return scoped_kubeconfig(found, namespace, token)


def admin_access(platform: Mapping[str, Any], env: str) -> ClusterAccess:
    """The platform admin's credentials, from the platform's outputs (secrets shown)."""
    from trainstack.deploy.kube import ClusterAccess

    kubeconfig = str(platform.get(names.OUT_KUBECONFIG) or "") or None
    if kubeconfig is not None and not is_kubeconfig_contents(kubeconfig):
        from trainstack.infra.platform.kubeconfigs import admin_kubeconfig_text

        read = admin_kubeconfig_text(kubeconfig)
        kubeconfig = read[0] if read is not None else None
    return ClusterAccess(
        kubeconfig=kubeconfig,
        context=str(platform.get(names.OUT_KUBE_CONTEXT) or "") or None,
        source=f"the platform stack of {env!r} (its admin kubeconfig)",
    )


def scope_program(outputs: Mapping[str, Any]) -> dict[str, pulumi.Output[Any]]:
    """What the scope stack exports: its secrets marked secret, so they are encrypted in state."""
    import pulumi

    return {
        key: pulumi.Output.secret(value)
        if key in SECRET_OUTPUTS
        else pulumi.Output.from_input(value)
        for key, value in sorted(outputs.items())
    }


def team_passphrase() -> str:
    phrase = os.environ.get(TEAM_PASSPHRASE_ENV, "")
    if not phrase:
        raise ConfigError(
            f"${TEAM_PASSPHRASE_ENV} is not set: a team's scope is encrypted with the team's own "
            "passphrase, which its members use as PULUMI_CONFIG_PASSPHRASE",
            hint=f"export {TEAM_PASSPHRASE_ENV}=<the team's passphrase> (never the platform's)",
        )
    return phrase


def mint_scope(
    platform: Mapping[str, Any], team: str, env: str
) -> tuple[dict[str, Any], Minted, int]:
    """``team``'s scope from the platform's outputs (secrets shown), with a token minted for it
    now; also the token and the hours asked."""
    from trainstack.deploy import scopetoken

    namespace = team_namespace(platform, team, env)
    hours = token_hours(platform, env)
    minted = scopetoken.mint(admin_access(platform, env), namespace, hours)
    kubeconfig = team_kubeconfig(platform, namespace, minted.token)
    record = scopetoken.token_record(team, namespace, minted)
    return scope_outputs(platform, team, env, kubeconfig, record), minted, hours


def publish(
    env: str,
    team: str,
    *,
    command: auto.PulumiCommand,
    settings: DeploySettings,
    passphrase: str,
) -> Published:
    """Mint ``team``'s token and write its scope of ``env`` (the caller holds the platform's
    passphrase in ``settings``). Minting revokes the team's previous scope token, so should the
    write then fail the team waits for the next publish."""
    from pulumi import automation as auto

    from trainstack.deploy.platform import read_stack_outputs
    from trainstack.deploy.settings import PASSPHRASE_ENV, platform_stack_name

    if passphrase == settings.env_vars()[PASSPHRASE_ENV]:
        raise ConfigError(
            f"team {team!r}'s passphrase is the platform's: its scope would open with the "
            "platform's secrets",
            hint=f"give each team a passphrase of its own in ${TEAM_PASSPHRASE_ENV}",
        )
    platform = read_stack_outputs(
        settings, platform_stack_name(env), env, command, show_secrets=True
    )
    outputs, minted, hours = mint_scope(platform, team, env)
    name = scope_stack_name(env, team)

    def program() -> None:
        import pulumi

        for key, value in scope_program(outputs).items():
            pulumi.export(key, value)

    project = auto.ProjectSettings(
        name=SCOPES_PROJECT,
        runtime="python",
        backend=auto.ProjectBackend(url=settings.backend_url),
        description="trainstack: one secrets scope per team",
    )
    # A folder of its own: the workspace writes its project's Pulumi.yaml there, and the runs
    # project's (settings.work_dir) must stay as it is.
    work_dir = settings.home / "pulumi-scopes"
    work_dir.mkdir(parents=True, exist_ok=True)
    opts = auto.LocalWorkspaceOptions(
        work_dir=str(work_dir),
        env_vars={**settings.env_vars(), PASSPHRASE_ENV: passphrase},
        secrets_provider="passphrase",
        project_settings=project,
        pulumi_command=command,
    )
    stack = auto.create_or_select_stack(
        name, project_name=SCOPES_PROJECT, program=program, opts=opts
    )
    stack.up(show_secrets=False)
    return Published(name, minted.expires, hours)
