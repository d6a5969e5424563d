"""`trainstack logs RUN`: a run's replica logs — local runs from their run directory, deployed
runs from their pods on the cluster while they exist and from the artifact store after."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from trainstack.cli.options import (
    backend_option,
    env_option,
    home_option,
    store_option,
    team_option,
)
from trainstack.contract.rundir import RunDir
from trainstack.deploy.index import INDEX_FILE
from trainstack.errors import NotFoundError, ToolMissingError, UserError

if TYPE_CHECKING:
    from trainstack.registry import RunRecord


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--role", help="Only this role's replicas (master, worker, ps, …).")
@click.option("--index", type=click.IntRange(min=0), help="Only replica INDEX (of --role).")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new lines until the run ends.")
@click.option("--grep", "pattern", metavar="PATTERN", help="Only lines matching this regex.")
@click.option("--tail", type=click.IntRange(min=0), metavar="N", help="Only the last N lines.")
@click.option(
    "--system/--no-system",
    default=None,
    help="Only trainstack's own lines (marked [trainstack]), or none of them (default: all).",
)
@click.option(
    "--download",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Write each selected replica's whole log to DIR/<role>-<index>.log instead.",
)
@store_option
@env_option
@team_option
@home_option
@backend_option
def logs(
    run_ref: str,
    role: str | None,
    index: int | None,
    follow: bool,
    pattern: str | None,
    tail: int | None,
    system: bool | None,
    download: Path | None,
    store: Path | None,
    env: str | None,
    team: str | None,
    home: Path | None,
    backend: str | None,
) -> None:
    """Print a run's logs (RUN: an id, an id prefix, or a name for its latest run)."""
    from trainstack import logview
    from trainstack.registry import Registry, RunKind, state_home

    keep = logview.line_filter(logview.compile_grep(pattern), system)
    if download is not None and (follow or tail is not None or keep is not None):
        raise UserError(
            "--download writes whole logs: it takes no --follow, --tail, --grep or --system",
            hint="download, then search the files; or print with those options",
        )
    out = sys.stdout.buffer

    def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    with Registry.open(state_home(home)) as reg:
        reg.mark_interrupted()
        unknown: NotFoundError | None = None
        try:
            record = reg.resolve(run_ref)
        except NotFoundError as err:
            record, unknown = None, err  # perhaps deployed by a teammate: the backend knows
        if record is None or record.kind is RunKind.CLUSTER or record.run_dir is None:
            try:
                _deployed(
                    record.name if record else run_ref,
                    record,
                    env,
                    team,
                    home,
                    backend,
                    role,
                    index,
                    follow,
                    tail,
                    logview.grep_lines(write, keep),
                    download,
                    store,
                )
            except (ToolMissingError, NotFoundError) as err:
                if unknown is None or _in_index(run_ref, env, team, reg.home):
                    raise  # a deployed run: its logs are on the cluster, through the CLI
                # Most likely a typo, not a teammate's run: say so before asking for a CLI.
                teammates = (
                    "runs a teammate deployed are looked up through the Pulumi CLI, which is "
                    "not installed"
                    if isinstance(err, ToolMissingError)
                    else "no run has been deployed from this home"
                )
                raise NotFoundError(
                    unknown.message,
                    hint=f"{unknown.hint}; the stack index ({reg.home / INDEX_FILE}) has no "
                    f"such run either, and {teammates}",
                ) from None
            return

        def running() -> bool:
            reg.mark_interrupted()
            return not reg.get(record.id).status.finished

        files = logview.wait_for(
            RunDir(record.run_dir).logs, role, index, running=running if follow else None
        )
        if download is not None:
            _wrote(logview.download(files, download))
            return
        try:
            logview.show(files, write, tail=tail, keep=keep, follow=running if follow else None)
        except BrokenPipeError:
            # `trainstack logs … | head`: the reader left; that is not an error.
            sys.stderr.close()


def _in_index(run: str, env: str | None, team: str | None, home: Path) -> bool:
    from trainstack.deploy.index import RunIndex

    try:
        RunIndex(home).find(run, env, team)
    except NotFoundError:
        return False
    return True


def _deployed(
    run: str,
    record: RunRecord | None,
    env: str | None,
    team: str | None,
    home: Path | None,
    backend: str | None,
    role: str | None,
    index: int | None,
    follow: bool,
    tail: int | None,
    write: Callable[[bytes], None],
    download: Path | None,
    store: Path | None,
) -> None:
    from trainstack.deploy import logs as deployed_logs
    from trainstack.deploy import service

    def read() -> list[Path]:
        try:
            found = service.locate(run, env, team=team, home=home, backend=backend)
        except (NotFoundError, ToolMissingError):
            # Its stack was destroyed (the data kept): the logs are where the registry recorded.
            place = record.log_place if record is not None else None
            if record is None or place is None:
                raise
            return deployed_logs.read_store(
                place, record.log_region, role, index, tail, write, download, store
            )
        return deployed_logs.show(
            found,
            role=role,
            index=index,
            follow=follow,
            tail=tail,
            write=write,
            download=download,
            store=store,
        )

    try:
        written = read()
    except BrokenPipeError:
        sys.stderr.close()
        return
    if download is not None:
        _wrote(written)


def _wrote(paths: list[Path]) -> None:
    for path in paths:
        click.echo(f"wrote {path}")
