"""``trainstack plan``: the platform program or a run program, run offline under mocks.

Pulumi is imported inside these functions so that verbs which never plan do not pay for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainstack.plan.envfile import find_project, read_env

if TYPE_CHECKING:
    from trainstack.plan.engine import Plan


def plan_platform(env: str, start: Path | None = None) -> Plan:
    """What ``pulumi up --stack ENV`` of the platform project would create."""
    from trainstack.infra.platform.program import build, load_stack_config
    from trainstack.plan.engine import run_program

    project = find_project(start)
    config = read_env(project, env)

    def program() -> dict[str, Any]:
        return build(load_stack_config())

    return run_program(program, project=project.name, stack=env, config=config.values,
                       secret_keys=config.secret_keys)


def plan_run(run_file: Path, env: str, start: Path | None = None) -> Plan:
    """What ``trainstack deploy RUN_FILE --env ENV`` would create (the run's own stack)."""
    from trainstack.errors import UserError

    raise UserError("planning a run needs the renderer (trainstack.render), "
                    "which this checkout does not have yet")
