"""Serving the console: the certificate and key checked (with `--tls-cert`/`--tls-key`) and the
address bound before anything is printed (a port in use, an address this machine does not have,
a port that needs root, a bad certificate or key: one error each), a token when the address is
not loopback, then waitress (a pure-Python WSGI server) on a few threads until Ctrl-C, each
connection held to `trainstack.ui.channel`'s limits, over TLS where asked
(`trainstack.ui.tls`)."""

from __future__ import annotations

import errno
import ipaddress
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from trainstack.errors import UserError
from trainstack.ui.channel import Limits, bounded

if TYPE_CHECKING:
    from waitress.server import BaseWSGIServer, MultiSocketServer

    from trainstack.ui.tls import TlsFiles

THREADS = 8


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Listening:
    url: str  # what to open, the token included
    server: BaseWSGIServer | MultiSocketServer
    loopback: bool = True
    tls: bool = False


def listen(
    home: Path,
    project: Path | None,
    host: str,
    port: int,
    token: str | None,
    limits: Limits | None = None,
    store: Path | None = None,
    tls: TlsFiles | None = None,
) -> Listening:
    """The console bound to `host`:`port` (0: any free port), not yet serving; over TLS with
    `tls`'s certificate and key."""
    from waitress.server import BaseWSGIServer, create_server

    from trainstack.ui.app import UiConfig, create_app

    limits = limits or Limits()
    loopback = is_loopback(host)
    if token is not None and len(token) < 16:
        raise UserError("--token: use at least 16 characters", hint="or leave it out: one is made")
    tls_context = None
    if tls is not None:
        from trainstack.ui.tls import context

        tls_context = context(tls)
    if not loopback and token is None:
        token = secrets.token_urlsafe(24)
    config = UiConfig(
        home=home,
        project=project,
        token=token,
        loopback=loopback,
        store=store,
        tls=tls is not None,
    )
    app = create_app(config)
    scheme = "https" if tls is not None else "http"
    try:
        server = create_server(
            app,
            host=host,
            port=port,
            threads=THREADS,
            ident="trainstack",
            url_scheme=scheme,
            **limits.adjustments(),
        )
    except OSError as err:
        raise _bind_error(host, port, err) from None
    if tls_context is not None:
        from trainstack.ui.tls import tls_channel

        channel: type = tls_channel(limits, tls_context)
    else:
        channel = bounded(limits)
    sockets = getattr(server, "map", {server: server}).values()  # one server, or one per address
    for each in sockets:
        if isinstance(each, BaseWSGIServer):
            each.channel_class = channel
    bound = int(getattr(server, "effective_port", port))
    shown = f"[{host}]" if ":" in host else host
    url = f"{scheme}://{shown}:{bound}/" + (f"?token={quote(token, safe='')}" if token else "")
    return Listening(url, server, loopback, tls is not None)


def _bind_error(host: str, port: int, err: OSError) -> UserError:
    if err.errno == errno.EADDRINUSE:
        return UserError(
            f"port {port} on {host} is in use by another program",
            hint="pick another with --port (--port 0 takes any free port)",
        )
    if err.errno == errno.EACCES:
        return UserError(
            f"cannot listen on port {port}: permission denied",
            hint="ports below 1024 need root; pick one above with --port",
        )
    if err.errno == errno.EADDRNOTAVAIL or isinstance(err, socket.gaierror):
        return UserError(
            f"--host {host}: not an address of this machine",
            hint="127.0.0.1 (the default) serves this machine only; 0.0.0.0 every interface",
        )
    return UserError(f"cannot listen on {host}:{port}: {err.strerror or err}")


def serve(listening: Listening, echo: Callable[[str], None]) -> None:
    """Print where the console is and serve until interrupted."""
    echo(f"trainstack ui: serving {listening.url}")
    if "token=" in listening.url:
        echo("  (the token in this link is printed once: whoever has it can read your runs)")
    if not listening.loopback and not listening.tls:
        # Said loudly rather than left for the user to discover.
        echo(
            "  WARNING: plain HTTP off this machine: the token and every page cross the network "
            "unencrypted. Give --tls-cert FILE --tls-key FILE, or serve on 127.0.0.1 and reach "
            "it through `ssh -L PORT:127.0.0.1:PORT` (docs/ui.md)"
        )
    echo("  Ctrl-C stops it")
    try:
        listening.server.run()
    except KeyboardInterrupt:
        echo("trainstack ui: stopped")
    finally:
        listening.server.close()
