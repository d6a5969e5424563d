"""`trainstack ui`: a read-only web console over this state home's runs (docs/ui.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from trainstack.cli.options import home_option, project_option, store_option
from trainstack.envnames import UI_TOKEN_ENV

DEFAULT_PORT = 8765


@click.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; anything but loopback needs a token (one is made and printed).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port to listen on (0: any free port).",
)
@click.option(
    "--token",
    envvar=UI_TOKEN_ENV,
    default=None,
    help="Require this token on every request ($TRAINSTACK_UI_TOKEN).",
)
@click.option(
    "--tls-cert",
    type=click.Path(path_type=Path),
    default=None,
    help="Serve HTTPS with this PEM certificate (its chain after it); with --tls-key.",
)
@click.option(
    "--tls-key",
    type=click.Path(path_type=Path),
    default=None,
    help="The certificate's PEM private key, without a passphrase; with --tls-cert.",
)
@project_option
@store_option
@home_option
def ui(
    host: str,
    port: int,
    token: str | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    project: Path | None,
    store: Path | None,
    home: Path | None,
) -> None:
    """Serve the runs, run pages (charts, logs, restarts), experiments, compare and sweeps of
    this state home as a local web console; it only reads."""
    from trainstack.errors import UserError
    from trainstack.registry import Registry, state_home
    from trainstack.registry.dbfile import check_existing
    from trainstack.ui.server import listen, serve
    from trainstack.ui.tls import TlsFiles

    if (tls_cert is None) != (tls_key is None):
        given, missing = ("--tls-cert", "--tls-key") if tls_cert else ("--tls-key", "--tls-cert")
        raise UserError(f"{given} needs {missing}", hint="give both: the certificate and its key")
    tls = TlsFiles(tls_cert, tls_key) if tls_cert is not None and tls_key is not None else None
    root = state_home(home)
    # Checked now, read-only: a damaged one is one error; none is left uncreated (the console
    # only reads). An existing one is brought to this trainstack's schema, as any verb would.
    if check_existing(root):
        with Registry.open(root):
            pass
    else:
        click.echo(f"trainstack ui: no run recorded in {root} yet")
    listening = listen(root, project, host, port, token, store=store, tls=tls)

    def echo(line: str) -> None:
        click.echo(line)
        sys.stdout.flush()

    serve(listening, echo)
