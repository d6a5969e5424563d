"""`trainstack init NAME`: scaffold a component folder that validates."""

from __future__ import annotations

from pathlib import Path

import click

from trainstack.kubedl import KINDS, JobType

# Every kind the model knows, PyTorch (the default) first.
JOB_TYPES = [JobType.PYTORCH.value, *(t.value for t in KINDS if t is not JobType.PYTORCH)]


@click.command()
@click.argument("name")
@click.option(
    "--job-type",
    type=click.Choice(JOB_TYPES),
    default="pytorch",
    show_default=True,
    help="The KubeDL job kind the component runs as.",
)
@click.option(
    "--dir",
    "parent",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("."),
    show_default=True,
    help="Where to create the NAME folder.",
)
@click.option(
    "--registry",
    default=None,
    help="Registry (host, or host/path) the component's image is pushed to; default: the "
    "platform project's `local` environment's registry, when there is a project.",
)
def init(name: str, job_type: str, parent: Path, registry: str | None) -> None:
    """Create NAME/ with component.yaml, src/main.py (reads the contract), runs/example.yaml
    (file:// bindings to sample data in NAME/runs/data/). Never overwrites."""
    from trainstack.spec.scaffold import platform_registry, scaffold

    written = scaffold(name, job_type, parent, registry or platform_registry(parent))
    root = parent / name
    for path in written:
        click.echo(f"created {path}")
    click.echo(
        f"\nnext: trainstack validate {root}\n      trainstack run --local "
        f"{root / 'runs' / 'example.yaml'}"
    )
