"""Entry point. Verbs are imported lazily: `trainstack validate` never pays for Pulumi or torch."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from trainstack.errors import UserError

# verb -> "module:attribute". Add a verb by adding one line here and one module in cli/.
VERBS: dict[str, str] = {
    "validate": "trainstack.cli.validate:validate",
    "schema": "trainstack.cli.schema:schema",
    "init": "trainstack.cli.init:init",
    "env": "trainstack.cli.env:env",
    "render": "trainstack.cli.render:render",
    "plan": "trainstack.cli.plan:plan",
    "policy": "trainstack.cli.policy:policy",
    "changed": "trainstack.cli.changed:changed",
    "kubedl": "trainstack.cli.kubedl:kubedl",
    "deploy": "trainstack.cli.deploy:deploy",
    "status": "trainstack.cli.status:status",
    "queue": "trainstack.cli.queue:queue",
    "wait": "trainstack.cli.wait:wait",
    "destroy": "trainstack.cli.destroy:destroy",
    "gc": "trainstack.cli.gc:gc",
    "scope": "trainstack.cli.scope:scope",
    "run": "trainstack.cli.run:run",
    "logs": "trainstack.cli.logs:logs",
    "runs": "trainstack.cli.runs:runs",
    "metrics": "trainstack.cli.metrics:metrics",
    "report": "trainstack.cli.report:report",
    "cost": "trainstack.cli.cost:cost",
    "sweep": "trainstack.cli.sweep:sweep",
    "sweeps": "trainstack.cli.sweeps:sweeps",
    "ui": "trainstack.cli.ui:ui",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(VERBS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = VERBS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in VERBS:
            from trainstack.suggest import did_you_mean

            ctx.fail(f"no such command {name!r}.{did_you_mean(name, VERBS)}")
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="trainstack")
@click.option(
    "--home",
    type=click.Path(file_okay=False),
    default=None,
    help="State directory for whatever verb follows (as $TRAINSTACK_HOME; the verbs "
    "that keep state also take --home themselves).",
)
def cli(home: str | None) -> None:
    """trainstack: ML training on your own Kubernetes cluster, as code."""
    if home:
        import os

        from trainstack.registry.home import HOME_ENV

        # One place for every verb: each reads the state home through state_home().
        os.environ[HOME_ENV] = os.path.abspath(os.path.expanduser(home))


def main(argv: list[str] | None = None) -> Any:
    from trainstack.cli import stdout

    # Only the process's own standard output (not a test runner's capture) is guarded.
    if not (sys.stdout is None or sys.stdout is sys.__stdout__):
        return _main(argv)
    closed = stdout.install()
    exited: SystemExit | None = None
    code: Any = 0
    try:
        try:
            code = _main(argv)
        except SystemExit as done:
            exited, code = done, done.code
        if sys.stdout is not None:
            sys.stdout.flush()  # what is still buffered fails here on a full disk
    except OSError:
        if stdout.failure() is None:
            raise
    if stdout.broken_pipe():
        # `… | head -1`: the reader left; the verb's own outcome stands (docs/local.md).
        stdout.abandon()
    elif closed or stdout.failure() is not None:
        why = stdout.abandon()
        click.echo(f"error: cannot write to standard output: {why}", err=True)
        sys.exit(code if isinstance(code, int) and code else 1)
    if exited is not None:
        raise exited
    return code


def _main(argv: list[str] | None) -> Any:
    try:
        try:
            return cli.main(args=argv, prog_name="trainstack", standalone_mode=False)
        except ModuleNotFoundError as err:
            from trainstack.extras import missing_extra

            missing = missing_extra(err)
            if missing is None:
                raise
            raise missing from None
    except UserError as err:
        click.echo(f"error: {err.render()}", err=True)
        sys.exit(err.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as err:
        err.show()
        sys.exit(2 if isinstance(err, click.UsageError) else err.exit_code)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
