"""`trainstack render RUN.yaml [-o DIR]`: the run's manifests, ready for `kubectl apply`."""

from __future__ import annotations

from pathlib import Path

import click

from trainstack import platformnames as names
from trainstack.cli.options import KubeName, components_option, environment, project_option
from trainstack.errors import UserError
from trainstack.render import RenderOptions, dump_yaml, render_run, write_directory
from trainstack.spec import load_run

# What --env decides (from the platform's outputs, as plan and deploy do).
_CLUSTER_OPTIONS = (
    "namespace",
    "local_cluster",
    "oss_endpoint",
    "oss_secret",
    "oss_role",
    "pull_secret",
)


@click.command()
@click.argument("run_file", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write one file per resource into this directory (default: stdout).",
)
@click.option(
    "--namespace",
    type=KubeName("namespace name"),
    default="default",
    show_default=True,
    help="Namespace for runs that name none.",
)
@click.option(
    "--local-cluster",
    is_flag=True,
    help="Target a local cluster (kind, minikube): file:// bindings become hostPath.",
)
@click.option(
    "--oss-endpoint",
    default=RenderOptions.oss_endpoint,
    show_default=True,
    help="OSS endpoint for oss:// URIs that name none.",
)
@click.option(
    "--oss-secret",
    type=KubeName("Secret name", subdomain=True),
    default=names.OSS_SECRET_NAME,
    show_default=True,
    help="Secret (akId, akSecret) the OSS CSI driver mounts with, by name.",
)
@click.option(
    "--oss-role",
    default=None,
    help="RAM role the OSS CSI driver assumes through RRSA (authType: rrsa), instead of a Secret.",
)
@click.option(
    "--pull-secret",
    type=KubeName("Secret name", subdomain=True),
    default=names.PULL_SECRET_NAME,
    show_default=True,
    help="Image pull secret (by name) when the run and component name none.",
)
@click.option(
    "--code-bucket",
    default=None,
    callback=lambda ctx, param, value: _code_bucket(value),
    help="oss://bucket/prefix/ where local code directories are uploaded.",
)
@components_option
@environment(
    "Render for this environment as plan and deploy do: namespace, cluster, "
    "OSS and pull secrets from its platform (Pulumi.<ENV>.yaml, planned offline)."
)
@project_option
@click.pass_context
def render(
    ctx: click.Context,
    run_file: Path,
    output: Path | None,
    namespace: str,
    local_cluster: bool,
    oss_endpoint: str,
    oss_secret: str,
    oss_role: str | None,
    pull_secret: str,
    code_bucket: str | None,
    components_dir: Path | None,
    env: str | None,
    project: Path | None,
) -> None:
    """Render RUN_FILE to Kubernetes manifests (byte-identical for the same inputs). With --env,
    or a platform project named by --project or $TRAINSTACK_PROJECT, the project's templates/
    come before the packaged ones (docs/templates.md)."""
    from trainstack.envfile import find_project
    from trainstack.render.overrides import for_project

    run = load_run(run_file, components_dir=components_dir)
    # Without --env only a project named here counts: a plain render does not depend on where
    # it is run from.
    found = find_project(project) if env is not None or project is not None else None
    templates = for_project(found.root) if found is not None else None
    if env is not None:
        given = [
            f"--{name.replace('_', '-')}"
            for name in _CLUSTER_OPTIONS
            if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
        ]
        if given:
            raise UserError(
                f"{', '.join(given)}: --env {env} decides this from the environment's platform",
                hint="drop one or the other",
            )
        from dataclasses import replace

        from trainstack.infra.run.rendered import for_environment
        from trainstack.plan.service import check_operator, platform_outputs

        where = find_project(project) if found is None else found
        outputs, _ = platform_outputs(where, env)
        check_operator(where, env, run, outputs)
        # The same completion deploy and plan apply: unbound outputs and $METRICS into the
        # platform's artifact store.
        run, options = for_environment(outputs, run, env)
        options = replace(options, code_bucket=code_bucket)
    else:
        options = RenderOptions(
            namespace=namespace,
            local_cluster=local_cluster,
            oss_endpoint=oss_endpoint,
            oss_secret=oss_secret or None,
            oss_ram_role=oss_role,
            pull_secret=pull_secret or None,
            code_bucket=code_bucket,
        )
    docs = render_run(run, options=options, templates=templates)
    if templates is not None:  # after the render: a failed one is its error alone
        click.echo(templates.summary(), err=True)
    if output is None:
        click.echo(dump_yaml(docs), nl=False)
        return
    paths = write_directory(docs, output)
    click.echo(f"{len(paths)} manifest(s) in {output}", err=True)


def _code_bucket(value: str | None) -> str | None:
    """oss://bucket/prefix/, checked as an output bound there would be."""
    if value is None:
        return None
    from trainstack.spec.values import binding

    try:
        parsed = binding(value.rstrip("/") + "/")
    except ValueError as err:
        raise click.BadParameter(str(err)) from None
    if parsed.scheme != "oss":
        raise click.BadParameter(
            f"{value!r}: code is uploaded to OSS; expected oss://bucket/prefix/"
        )
    return value
