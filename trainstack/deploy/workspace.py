"""The Pulumi CLI and the runs project's workspace, as the Automation API wants them.

Everything the Automation API does goes through the ``pulumi`` CLI. When it is missing or too old
this is a ``ToolMissingError`` that says what to install, raised before any state is touched.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from typing import TYPE_CHECKING

from trainstack import platformnames as names
from trainstack.errors import ToolMissingError

if TYPE_CHECKING:
    from pulumi import automation as auto

    from trainstack.deploy.settings import DeploySettings

INSTALL_HINT = (
    "install the Pulumi CLI (https://www.pulumi.com/docs/install/: "
    "`curl -fsSL https://get.pulumi.com | sh` or `brew install pulumi/tap/pulumi`) "
    "and make sure `pulumi` is on PATH; `trainstack plan` needs no CLI"
)


def find_pulumi() -> auto.PulumiCommand:
    """The installed CLI, version-checked; ``ToolMissingError`` when there is none."""
    from pulumi import automation as auto
    from pulumi.automation.errors import InvalidVersionError

    if shutil.which("pulumi") is None:
        raise ToolMissingError(
            "the Pulumi CLI (`pulumi`) is needed for deploy, status, wait, logs of a deployed "
            "run, scope publish and destroy, and it is not installed",
            hint=INSTALL_HINT,
        )
    try:
        return auto.PulumiCommand()
    except subprocess.CalledProcessError as err:
        # PulumiCommand runs `pulumi version` first; the CLI's own message went to stderr.
        raise ToolMissingError(
            f"the Pulumi CLI on PATH cannot be used: `pulumi version` exited with {err.returncode}",
            hint=INSTALL_HINT,
        ) from None
    except (OSError, InvalidVersionError) as err:
        raise ToolMissingError(
            f"the Pulumi CLI on PATH cannot be used: {err}", hint=INSTALL_HINT
        ) from None


def runs_workspace(settings: DeploySettings, command: auto.PulumiCommand) -> auto.LocalWorkspace:
    """The runs project's workspace, without selecting a stack (to list and read tags)."""
    from pulumi import automation as auto

    opts = _options(settings, command)
    return auto.LocalWorkspace(
        work_dir=opts.work_dir,
        env_vars=opts.env_vars,
        secrets_provider=opts.secrets_provider,
        project_settings=opts.project_settings,
        pulumi_command=command,
    )


def _options(settings: DeploySettings, command: auto.PulumiCommand) -> auto.LocalWorkspaceOptions:
    from pulumi import automation as auto

    project = auto.ProjectSettings(
        name=names.RUNS_PROJECT,
        runtime="python",
        backend=auto.ProjectBackend(url=settings.backend_url),
        description="trainstack: one stack per run",
    )
    return auto.LocalWorkspaceOptions(
        work_dir=str(settings.work_dir),
        env_vars=settings.env_vars(),
        secrets_provider="passphrase",
        project_settings=project,
        pulumi_command=command,
    )


def open_stack(
    settings: DeploySettings,
    stack_name: str,
    program: Callable[[], None],
    command: auto.PulumiCommand,
    *,
    create: bool,
    new: bool = False,
) -> auto.Stack:
    """Select the run stack (``create``: or initialise it; ``new``: initialise it, known to be
    absent) in the runs project."""
    from pulumi import automation as auto

    opts = _options(settings, command)
    if new:
        return auto.create_stack(
            stack_name, project_name=names.RUNS_PROJECT, program=program, opts=opts
        )
    if create:
        return auto.create_or_select_stack(
            stack_name, project_name=names.RUNS_PROJECT, program=program, opts=opts
        )
    return auto.select_stack(
        stack_name, project_name=names.RUNS_PROJECT, program=program, opts=opts
    )
