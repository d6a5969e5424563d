"""``trainstack deploy | status | destroy``: one Pulumi stack per run, via the Automation API.

deploy: select (or init) the run's stack, set its config and tags, ``up`` the run program, record
the run (run registry + our stack index). status: the stack's last update and outputs. destroy:
``destroy`` the stack, remove it, drop it from the index. Pulumi is imported only in here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainstack.deploy.index import RunIndex, StackEntry
from trainstack.deploy.settings import (
    DeploySettings,
    is_passphrase_error,
    load_settings,
    passphrase_mismatch,
    platform_stack_name,
    run_stack_name,
)
from trainstack.errors import NotFoundError, UserError
from trainstack.infra import names
from trainstack.registry.home import state_home

if TYPE_CHECKING:
    from pulumi import automation as auto

    from trainstack.spec.model import Run

OnOutput = Callable[[str], None]
_TAIL_LINES = 15


class DeployFailedError(UserError):
    """The Pulumi CLI ran and reported a failure; the message carries the end of its output."""

    exit_code = 1


@dataclass(frozen=True)
class StackStatus:
    entry: StackEntry
    last_kind: str | None
    last_result: str | None
    last_end: str | None
    outputs: dict[str, Any]  # secret outputs shown as "[secret]"


def deploy(run_file: Path, env: str, *, command: auto.PulumiCommand | None = None,
           home: Path | None = None, backend: str | None = None,
           on_output: OnOutput | None = None) -> StackEntry:
    """Render ``run_file`` for the platform of ``env`` and bring its stack up to date."""
    from trainstack.deploy.platform import read_platform_outputs
    from trainstack.deploy.workspace import find_pulumi
    from trainstack.spec import load_run

    cli = command or find_pulumi()  # before anything else: without the CLI nothing can happen
    run = load_run(run_file)
    settings = load_settings(home, backend)
    platform = read_platform_outputs(settings, env, cli)
    return deploy_run(run, render(run, platform, env), env, command=cli, home=home,
                      backend=backend, on_output=on_output)


def render(run: Run, platform_outputs: Mapping[str, Any], env: str) -> list[dict[str, Any]]:
    """The run's manifests, rendered for the cluster the platform outputs describe."""
    from trainstack.infra.run.options import render_options
    from trainstack.render import render_run

    return render_run(run, options=render_options(platform_outputs, run, env))


def deploy_run(run: Run, manifests: Sequence[Mapping[str, Any]], env: str, *,
               command: auto.PulumiCommand, home: Path | None = None,
               backend: str | None = None, on_output: OnOutput | None = None) -> StackEntry:
    from trainstack.infra.run.program import build_run

    settings = load_settings(home, backend)
    stack_name = run_stack_name(env, run.name)
    platform = platform_stack_name(env)

    def program() -> None:
        import pulumi

        for key, value in build_run(run, manifests, platform).items():
            pulumi.export(key, value)

    with _cli_errors(f"deploying {run.name} ({stack_name})", settings, stack_name):
        stack = _open(settings, stack_name, program, command, create=True)
        _configure(stack, run, env, platform)
        registry_id = _record_pending(settings, run, stack_name)
        try:
            result = stack.up(on_output=on_output, show_secrets=False)
        except Exception:
            _record_end(settings, registry_id, failed=True, reason="pulumi up failed")
            raise
    outputs = {k: "[secret]" if v.secret else v.value for k, v in result.outputs.items()}
    _record_running(settings, registry_id)
    entry = StackEntry(
        run=run.name, env=env, stack=stack_name, project=names.RUNS_PROJECT,
        backend=settings.backend_url, component=run.component.name,
        version=run.component.version, experiment=run.experiment,
        spec_path=str(run.source) if run.source else None, registry_id=registry_id,
        updated_at=time.time(), outputs=outputs)
    index = RunIndex(settings.home)
    previous = [e for e in index.entries() if e.key == entry.key]
    if previous:  # an update replaces the job: the previous deployment's record ends here
        _record_end(settings, previous[0].registry_id, failed=False,
                    reason="superseded by a new deploy")
    index.put(entry)
    return entry


def status(run: str, env: str | None = None, *, command: auto.PulumiCommand | None = None,
           home: Path | None = None) -> StackStatus:
    from trainstack.deploy.workspace import find_pulumi

    entry = RunIndex(home or state_home()).find(run, env)  # nothing is created for a typo
    cli = command or find_pulumi()
    settings = load_settings(home, entry.backend)
    with _cli_errors(f"reading the stack of {run} ({entry.stack})", settings, entry.stack):
        stack = _open(settings, entry.stack, _no_program, cli, create=False)
        info = stack.info(show_secrets=False)
        outputs = {k: "[secret]" if v.secret else v.value for k, v in stack.outputs().items()}
    return StackStatus(
        entry=entry, last_kind=info.kind if info else None,
        last_result=info.result if info else None,
        last_end=info.end_time.isoformat() if info and info.end_time else None,
        outputs=outputs)


def destroy(run: str, env: str | None = None, *, command: auto.PulumiCommand | None = None,
            home: Path | None = None, on_output: OnOutput | None = None) -> StackEntry:
    """Delete everything the run's stack created, then the stack, then its index entry."""
    from trainstack.deploy.workspace import find_pulumi

    index = RunIndex(home or state_home())
    entry = index.find(run, env)
    cli = command or find_pulumi()
    settings = load_settings(home, entry.backend)
    with _cli_errors(f"destroying {run} ({entry.stack})", settings, entry.stack):
        stack = _open(settings, entry.stack, _no_program, cli, create=False)
        stack.destroy(on_output=on_output, show_secrets=False, remove=True)
    _record_end(settings, entry.registry_id, failed=False, reason="destroyed")
    index.remove(entry)
    return entry


def _no_program() -> None:
    """destroy and status never run the program; the Automation API still wants one."""


def _open(settings: DeploySettings, stack_name: str, program: Callable[[], None],
          command: auto.PulumiCommand, *, create: bool) -> auto.Stack:
    from pulumi.automation.errors import StackNotFoundError

    from trainstack.deploy.workspace import open_stack

    try:
        return open_stack(settings, stack_name, program, command, create=create)
    except StackNotFoundError:
        raise NotFoundError(f"stack {stack_name!r} does not exist in {settings.backend_url}",
                            hint="it was removed outside trainstack; deploy the run again"
                            ) from None


def _configure(stack: auto.Stack, run: Run, env: str, platform: str) -> None:
    from pulumi import automation as auto

    ns = names.RUNS_PROJECT
    stack.set_all_config({f"{ns}:env": auto.ConfigValue(env),
                          f"{ns}:run": auto.ConfigValue(run.name),
                          f"{ns}:platformStack": auto.ConfigValue(platform)})
    tags = {"component": run.component.name, "version": run.component.version,
            "experiment": run.experiment}
    for key, value in tags.items():
        if value:  # Pulumi refuses empty tag values; a run without experiment has no such tag
            stack.workspace.set_tag(stack.name, f"trainstack:{key}", value)


@contextmanager
def _cli_errors(doing: str, settings: DeploySettings, stack: str) -> Iterator[None]:
    """Turn the Automation API's CommandError into a DeployFailedError with the CLI's words
    (a wrong passphrase: into the one ConfigError that says what to set)."""
    from pulumi.automation.errors import CommandError, ConcurrentUpdateError

    try:
        yield
    except ConcurrentUpdateError:
        raise DeployFailedError(f"{doing}: another update of this stack is running",
                                hint="one update per stack at a time; wait and retry") from None
    except CommandError as err:
        if is_passphrase_error(str(err)):
            raise passphrase_mismatch(settings, stack) from None
        # The CLI masks secrets in what it prints; keep the end, where the reason is.
        lines = [ln for ln in str(err).strip().splitlines() if ln.strip()]
        raise DeployFailedError(f"{doing} failed:\n" + "\n".join(lines[-_TAIL_LINES:])
                                ) from None


# --- the run registry ------------------------------------------------------------------------


def _record_pending(settings: DeploySettings, run: Run, stack_name: str) -> str:
    from trainstack.registry import NewRun, Registry, RunKind

    with Registry.open(settings.home) as registry:
        record = registry.create(NewRun(
            name=run.name, component=run.component.name,
            component_version=run.component.version, kind=RunKind.CLUSTER,
            job_type=str(run.job_type.value), experiment=run.experiment, tags=dict(run.tags),
            spec_path=str(run.source) if run.source else None, stack_name=stack_name))
    return record.id


def _record_running(settings: DeploySettings, registry_id: str) -> None:
    from trainstack.registry import Registry

    with Registry.open(settings.home) as registry:
        registry.mark_running(registry_id, [])


def _record_end(settings: DeploySettings, registry_id: str | None, *, failed: bool,
                reason: str) -> None:
    from trainstack.registry import Registry, RunStatus

    if registry_id is None:
        return
    # NotFoundError: the registry was reset; the stack index is what destroy needs.
    with Registry.open(settings.home) as registry, suppress(NotFoundError):
        registry.finish(registry_id, RunStatus.FAILED if failed else RunStatus.CANCELLED,
                        reason=reason)
