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

from trainstack.deploy.kube import ClusterAccess
from trainstack.deploy.settings import (
    DeploySettings,
    is_passphrase_error,
    passphrase_mismatch,
    platform_stack_name,
)
from trainstack.errors import NotFoundError, UserError
from trainstack.infra import names

if TYPE_CHECKING:
    from pulumi import automation as auto


def read_platform_outputs(
    settings: DeploySettings, env: str, command: auto.PulumiCommand
) -> dict[str, Any]:
    return _outputs(settings, env, command, show_secrets=False)


def cluster_access(
    settings: DeploySettings, env: str, namespace: str, command: auto.PulumiCommand
) -> ClusterAccess:
    """How ``status``/``logs``/``wait`` reach the cluster: read from the platform stack's
    *current* outputs each time (so rotated credentials are picked up), preferring credentials
    scoped to the run's namespace (``teamKubeconfigs``) to the admin kubeconfig. The decrypted
    kubeconfig stays in this process's memory."""
    name = platform_stack_name(env)
    outputs = _outputs(settings, env, command, show_secrets=True)
    scoped = outputs.get(names.OUT_TEAM_KUBECONFIGS)
    if isinstance(scoped, dict) and scoped.get(namespace):
        return ClusterAccess(
            kubeconfig=str(scoped[namespace]),
            context=None,
            source=f"platform stack {name!r} output {names.OUT_TEAM_KUBECONFIGS}[{namespace}]",
        )
    kubeconfig = outputs.get(names.OUT_KUBECONFIG) or None
    return ClusterAccess(
        kubeconfig=str(kubeconfig) if kubeconfig else None,
        context=str(outputs.get(names.OUT_KUBE_CONTEXT) or "") or None,
        source=f"platform stack {name!r} output {names.OUT_KUBECONFIG}"
        if kubeconfig
        else "the ambient kubeconfig ($KUBECONFIG or ~/.kube/config)",
    )


def _outputs(
    settings: DeploySettings, env: str, command: auto.PulumiCommand, *, show_secrets: bool
) -> dict[str, Any]:
    from pulumi.automation.errors import CommandError, StackNotFoundError

    name = platform_stack_name(env)
    args = ["stack", "output", "--json", "--stack", name]
    try:
        result = command.run(
            [*args, "--show-secrets"] if show_secrets else args,
            str(settings.work_dir),
            settings.env_vars(),
        )
    except StackNotFoundError:
        raise NotFoundError(
            f"no platform stack {name!r} in {settings.backend_url}",
            hint=f"`pulumi up --stack {env}` the platform first, in the backend run stacks use "
            "($TRAINSTACK_BACKEND_URL), or name it with $TRAINSTACK_PLATFORM_STACK",
        ) from None
    except CommandError as err:
        if is_passphrase_error(str(err)):
            raise passphrase_mismatch(settings, name, platform_env=env) from None
        tail = "\n".join(str(err).strip().splitlines()[-5:])
        raise UserError(f"reading the outputs of platform stack {name!r} failed:\n{tail}") from None
    try:
        outputs = json.loads(result.stdout or "{}")
    except json.JSONDecodeError:
        raise UserError(
            f"platform stack {name!r}: `pulumi stack output --json` did not print JSON"
        ) from None
    if not isinstance(outputs, dict):
        raise UserError(f"platform stack {name!r}: expected its outputs as a JSON object")
    return outputs
