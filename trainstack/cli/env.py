"""`trainstack env RUN.yaml --role worker --index 1`: what one replica's process would see."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import click

from trainstack.cli.options import (
    KubeName,
    components_option,
    environment,
    output_format,
    project_option,
)
from trainstack.contract import (
    Topology,
    config_files,
    launch_command,
    operator_names,
    replica_env,
    secret_env_text,
)
from trainstack.errors import UserError
from trainstack.k8snames import job_name
from trainstack.kubedl import JobType, job_kind, replica_hostname
from trainstack.local.hostenv import passed_env
from trainstack.spec import load_run


@click.command()
@click.argument("run_file", type=click.Path(path_type=Path))
@click.option("--role", help="Replica role (default: the job kind's primary role).")
@click.option("--index", type=int, default=0, show_default=True, help="Replica index.")
@click.option(
    "--namespace",
    type=KubeName("namespace name"),
    default=None,
    help="Namespace for cluster addresses (default: the run's, else 'default').",
)
@click.option("--gpus", default="", help="Device ids to show in NVIDIA_VISIBLE_DEVICES, e.g. 0,1.")
@components_option
@output_format("sh", "json", help="sh prints NAME='value' lines that a shell can source.")
@click.option("--files/--no-files", default=False, help="Also print the config files and argv.")
@environment(
    "Show the replica as deployed to this environment (its team namespace, outputs in the "
    "platform's artifact store), from the platform's outputs as plan and deploy read them.",
    dest="environment",
)
@click.option(
    "--pass-env",
    "pass_env",
    multiple=True,
    metavar="NAME",
    help="Show this variable of your shell as a local run given --pass-env NAME would pass it "
    "(repeatable); a pod never gets it.",
)
@project_option
def env(
    run_file: Path,
    role: str | None,
    index: int,
    namespace: str | None,
    gpus: str,
    components_dir: Path | None,
    fmt: str,
    files: bool,
    environment: str | None,
    project: Path | None,
    pass_env: tuple[str, ...],
) -> None:
    """Print the environment of one replica of RUN_FILE, as it would run on the cluster."""
    run = load_run(run_file, components_dir=components_dir)
    if environment is not None:
        from trainstack.envfile import find_project
        from trainstack.infra.run.rendered import for_environment
        from trainstack.plan.service import platform_outputs

        if namespace is not None:
            raise UserError(
                f"--namespace: --env {environment} decides it from the environment's platform",
                hint="drop one or the other",
            )
        outputs, _ = platform_outputs(find_project(project), environment)
        run, options = for_environment(outputs, run, environment)
        namespace = options.namespace
    role = role or job_kind(run.job_type).primary_role
    topology = Topology.cluster(run, namespace or run.namespace or "default", job_name(run.name))
    devices = tuple(d for d in gpus.split(",") if d)
    variables = replica_env(run, role, index, topology=topology, gpus=devices)
    # spec.secretEnv: where each value comes from, never a value (there is none to show here).
    secrets = secret_env_text(run)
    # What the operator appends on a cluster (its values win): shown, and marked as such.
    kind = job_kind(run.job_type)
    by = "KubeDL" if kind.by_kubedl else "Kubernetes"
    injected = [n for n in operator_names(run, role) if n in variables]
    # What the container runtime adds: the pod's hostname (KubeDL names the pod).
    runtime = {
        "HOSTNAME": replica_hostname(run.job_type is JobType.CUSTOM, topology.job_name, role, index)
    }
    passed = passed_env(pass_env, os.environ)
    if fmt == "json":
        doc: dict[str, object] = {
            "env": variables,
            "secretEnv": secrets,
            "injectedBy": {n: by for n in injected},
            "runtime": runtime,
            "passedLocally": passed,
        }
        if files:
            doc["files"] = config_files(run, topology)
            doc["argv"] = launch_command(run, role, in_pod=True)
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    for key, value in variables.items():
        mark = f"  # set by {by}" if key in injected else ""
        click.echo(f"{key}={shlex.quote(value)}{mark}")
    for key, value in runtime.items():
        click.echo(f"{key}={shlex.quote(value)}  # set by the container runtime")
    for key, text in secrets.items():
        # A comment, so that sourcing the output never sets the placeholder as a value.
        click.echo(f"# {key}={text}")
    for key, value in passed.items():
        click.echo(f"{key}={shlex.quote(value)}  # from your shell: local runs with --pass-env")
    if files:
        for name, content in config_files(run, topology).items():
            click.echo(f"\n# $PAI_CONFIG_DIR/{name}\n{content}", nl=False)
        argv = launch_command(run, role, in_pod=True)
        click.echo("\n# argv\n" + " ".join(shlex.quote(a) for a in argv))
