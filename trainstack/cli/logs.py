"""`trainstack logs RUN`: a local run's replica logs."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from trainstack.errors import NotFoundError, UserError


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--role", help="Only this role's replicas (master, worker, ps, …).")
@click.option("--index", type=click.IntRange(min=0), help="Only replica INDEX (of --role).")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new lines until the run ends.")
@click.option("--grep", "pattern", metavar="PATTERN", help="Only lines matching this regex.")
@click.option("--tail", type=click.IntRange(min=0), metavar="N", help="Only the last N lines.")
@click.option("--home", type=click.Path(path_type=Path, file_okay=False),
              help="State directory (default: $TRAINSTACK_HOME or ./.trainstack).")
def logs(run_ref: str, role: str | None, index: int | None, follow: bool, pattern: str | None,
         tail: int | None, home: Path | None) -> None:
    """Print a run's logs (RUN: an id, an id prefix, or a name for its latest run)."""
    from trainstack.local import logview
    from trainstack.registry import Registry, state_home

    with Registry.open(state_home(home)) as reg:
        reg.reap_interrupted()
        record = reg.resolve(run_ref)
        if record.run_dir is None:
            raise UserError(f"run {record.id} ran on a cluster; its logs are in the cluster",
                            hint="kubectl logs with the run's job name")
        grep = logview.compile_grep(pattern)

        def running() -> bool:
            reg.reap_interrupted()
            return not reg.get(record.id).status.finished

        logs_dir = record.run_dir / "logs"
        while True:
            try:
                files = logview.select(logs_dir, role, index)
                break
            except NotFoundError:
                # Following a run that is still setting up: wait for its replicas' logs.
                if not (follow and running()):
                    raise
                time.sleep(0.2)

        out = sys.stdout.buffer

        def write(data: bytes) -> None:
            out.write(data)
            out.flush()

        try:
            logview.show(files, write, tail=tail, grep=grep, follow=running if follow else None)
        except BrokenPipeError:
            # `trainstack logs … | head`: the reader left; that is not an error.
            sys.stderr.close()
