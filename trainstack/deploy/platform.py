"""Read the platform stack's outputs: before a run is rendered, and to reach its cluster.

The renderer needs to know the cluster it renders for (team namespace, local or cloud, OSS
endpoint and role, pull secret); those are the platform stack's outputs. They are read with
``pulumi stack output --json`` *without* ``--show-secrets``: secret outputs (the kubeconfig)
arrive as ``[secret]`` and are never decrypted here — only the run program's StackReference reads
them, inside the engine.

This read is also the passphrase check: the CLI opens the platform stack's state with the run
stacks' passphrase (it decrypts every secret in it, even without ``--show-secrets``), exactly as
the StackReference will. A passphrase that does not match fails here, before any run stack exists,
as one ``ConfigError`` that says what to set — not as a failed ``up`` deep in the engine.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from trainstack import platformnames as names
from trainstack.deploy.kube import ClusterAccess
from trainstack.deploy.scopetoken import check_scope, renew_command
from trainstack.deploy.settings import (
    DeploySettings,
    is_passphrase_error,
    passphrase_mismatch,
    platform_stack_name,
)
from trainstack.errors import NotFoundError, UserError

if TYPE_CHECKING:
    from pulumi import automation as auto

    from trainstack.deploy.index import StackEntry


def read_platform_outputs(
    settings: DeploySettings, env: str, command: auto.PulumiCommand
) -> dict[str, Any]:
    return read_stack_outputs(settings, platform_stack_name(env), env, command, show_secrets=False)


def read_source_outputs(
    settings: DeploySettings, env: str, team: str | None, command: auto.PulumiCommand
) -> tuple[dict[str, Any], str]:
    """The outputs a run of ``team`` renders with, and the stack they came from: the team's
    secrets scope when one is published (deploy/scope.py), else the platform stack."""
    if team:
        from trainstack.platformnames import scope_stack_name

        scope = scope_stack_name(env, team)
        try:
            outputs = read_stack_outputs(settings, scope, env, command, show_secrets=False)
        except NotFoundError:
            pass  # no scope published: the platform stack, as before scopes existed
        else:
            check_scope(outputs, env=env, stack=scope, team=team)
            return outputs, scope
    return read_platform_outputs(settings, env, command), platform_stack_name(env)


def source_stack(
    settings: DeploySettings, env: str, team: str | None, command: auto.PulumiCommand
) -> str:
    return read_source_outputs(settings, env, team, command)[1]


def entry_source(settings: DeploySettings, entry: StackEntry, command: auto.PulumiCommand) -> str:
    """The stack a deployed run's StackReference reads: as its deploy recorded it, else (an entry
    from before scopes, or a teammate's from the backend's tags) the team's scope if published,
    else the platform stack."""
    recorded = entry.outputs.get("platformStack")
    if recorded:
        return str(recorded)
    return source_stack(settings, entry.env, entry.team, command)


def checked_source(settings: DeploySettings, entry: StackEntry, command: auto.PulumiCommand) -> str:
    """``entry_source``, a team scope's token checked as every reader of a scope checks it
    (destroy, whose run program reads the scope inside the engine)."""
    source = entry_source(settings, entry, command)
    if source != platform_stack_name(entry.env):
        outputs = read_stack_outputs(settings, source, entry.env, command, show_secrets=False)
        check_scope(outputs, env=entry.env, stack=source, team=entry.team)
    return source


def cluster_access(
    settings: DeploySettings,
    env: str,
    namespace: str,
    command: auto.PulumiCommand,
    source: str | None = None,
    team: str | None = None,
) -> ClusterAccess:
    """How ``status``/``logs``/``wait`` reach the cluster: read from the platform's (or the team's
    scope's) *current* outputs each time (so rotated credentials are picked up), preferring
    credentials scoped to the run's namespace (``teamKubeconfigs``) to the admin kubeconfig. The
    decrypted kubeconfig stays in this process's memory."""
    name = source or platform_stack_name(env)
    scope = name != platform_stack_name(env)
    what = "team scope stack" if scope else "platform stack"
    outputs = read_stack_outputs(settings, name, env, command, show_secrets=True)
    renew = ClusterAccess.renew
    if scope:
        check_scope(outputs, env=env, stack=name, team=team)
        renew = f"a platform admin runs `{renew_command(env, team or namespace)}`"
    scoped = outputs.get(names.OUT_TEAM_KUBECONFIGS)
    if isinstance(scoped, dict) and scoped.get(namespace):
        return ClusterAccess(
            kubeconfig=str(scoped[namespace]),
            context=None,
            source=f"{what} {name!r} output {names.OUT_TEAM_KUBECONFIGS}[{namespace}]",
            renew=renew,
        )
    kubeconfig = outputs.get(names.OUT_KUBECONFIG) or None
    return ClusterAccess(
        kubeconfig=str(kubeconfig) if kubeconfig else None,
        context=str(outputs.get(names.OUT_KUBE_CONTEXT) or "") or None,
        source=f"{what} {name!r} output {names.OUT_KUBECONFIG}"
        if kubeconfig
        else "the ambient kubeconfig ($KUBECONFIG or ~/.kube/config)",
    )


def read_stack_outputs(
    settings: DeploySettings,
    name: str,
    env: str,
    command: auto.PulumiCommand,
    *,
    show_secrets: bool,
) -> dict[str, Any]:
    from pulumi.automation.errors import CommandError, StackNotFoundError

    platform = name == platform_stack_name(env)
    what = "platform stack" if platform else "stack"
    args = ["stack", "output", "--json", "--stack", name]
    try:
        result = command.run(
            [*args, "--show-secrets"] if show_secrets else args,
            str(settings.work_dir),
            settings.env_vars(),
        )
    except StackNotFoundError:
        raise NotFoundError(
            f"no {what} {name!r} in {settings.backend_url}",
            hint=f"`pulumi up --stack {env}` the platform first, in the backend run stacks use "
            "($TRAINSTACK_BACKEND_URL), or name it with $TRAINSTACK_PLATFORM_STACK",
        ) from None
    except CommandError as err:
        if is_passphrase_error(str(err)):
            raise passphrase_mismatch(
                settings, name, platform_env=env if platform else None
            ) from None
        tail = "\n".join(str(err).strip().splitlines()[-5:])
        raise UserError(f"reading the outputs of {what} {name!r} failed:\n{tail}") from None
    try:
        outputs = json.loads(result.stdout or "{}")
    except json.JSONDecodeError:
        raise UserError(
            f"{what} {name!r}: `pulumi stack output --json` did not print JSON"
        ) from None
    if not isinstance(outputs, dict):
        raise UserError(f"{what} {name!r}: expected its outputs as a JSON object")
    return outputs
