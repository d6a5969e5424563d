"""Per-team secrets scopes: what a team's run stacks read, encrypted so only that team opens it.

The platform stack holds every secret of the platform (the admin kubeconfig, each team's token in
``teamKubeconfigs``), encrypted with the platform's passphrase. Run stacks used to reference it
directly, so whoever could deploy a run had to hold that passphrase and could decrypt all of it.

A *scope* is one small stack per team, ``organization/trainstack-scopes/<env>.<team>``, in the same
backend. ``trainstack scope publish`` (run by a platform admin, with the platform's passphrase,
after each ``pulumi up`` that changes outputs) writes into it the platform's non-secret outputs and
exactly one secret, the team's scoped kubeconfig, encrypted with the *team's* passphrase
(``$TRAINSTACK_TEAM_PASSPHRASE`` at publish; the team's members export it as their
``PULUMI_CONFIG_PASSPHRASE``). Run stacks, ``deploy``, ``status``, ``logs``, ``wait`` and
``destroy`` of that team's runs read the scope instead of the platform stack when it exists, so
a team member needs, and holds, only the team's passphrase: with it the platform stack does not
open, nor does another team's scope. A platform with no scopes published works as before.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from trainstack import platformnames as names
from trainstack.errors import ConfigError, UserError
from trainstack.platformnames import SCOPE_STACK_ENV as SCOPE_STACK_ENV
from trainstack.platformnames import SCOPES_PROJECT as SCOPES_PROJECT
from trainstack.platformnames import scope_stack_name as scope_stack_name

if TYPE_CHECKING:
    import pulumi
    from pulumi import automation as auto

    from trainstack.deploy.settings import DeploySettings

TEAM_PASSPHRASE_ENV = "TRAINSTACK_TEAM_PASSPHRASE"
# The platform's secret outputs. A scope carries the team's own part of them and nothing else.
SECRET_OUTPUTS = frozenset({names.OUT_KUBECONFIG, names.OUT_TEAM_KUBECONFIGS})


def scope_outputs(platform: Mapping[str, Any], team: str, env: str) -> dict[str, Any]:
    """The scope of ``team`` from the platform's outputs (secrets shown): every non-secret output,
    and the team's scoped kubeconfig as both ``kubeconfig`` and its one ``teamKubeconfigs`` entry.
    The admin kubeconfig and the other teams' credentials are left out."""
    from trainstack.infra.run.options import PlatformOutputs

    namespaces = PlatformOutputs.read(platform, env).namespaces
    if team not in namespaces:
        known = ", ".join(sorted(namespaces)) or "none"
        raise UserError(f"environment {env!r} has no team {team!r}", hint=f"its teams: {known}")
    namespace = namespaces[team]
    scoped = platform.get(names.OUT_TEAM_KUBECONFIGS)
    kubeconfig = scoped.get(namespace) if isinstance(scoped, Mapping) else None
    if not kubeconfig:
        raise UserError(
            f"the platform of {env!r} exports no scoped kubeconfig for team {team!r} "
            f"(namespace {namespace})",
            hint="its teamKubeconfigs output is filled once the platform can read its admin "
            "kubeconfig (docs/platform.md, 'Team credentials'); `pulumi up` it again",
        )
    out = {k: v for k, v in platform.items() if k not in SECRET_OUTPUTS}
    out[names.OUT_KUBECONFIG] = str(kubeconfig)
    out[names.OUT_KUBE_CONTEXT] = ""
    out[names.OUT_TEAM_KUBECONFIGS] = {namespace: str(kubeconfig)}
    return out


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


def publish(
    env: str,
    team: str,
    *,
    command: auto.PulumiCommand,
    settings: DeploySettings,
    passphrase: str,
) -> str:
    """Write ``team``'s scope of ``env`` (the caller holds the platform's passphrase in
    ``settings``); returns the scope stack's name."""
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
    outputs = scope_outputs(platform, team, env)
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
    return name
