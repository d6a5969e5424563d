"""Serving the console: the address checked and bound before anything is printed (a port in
use, an address this machine does not have, a port that needs root: one error each), a token
when the address is not loopback, then waitress (a pure-Python WSGI server) on a few threads
until Ctrl-C, each connection held to `trainstack.ui.channel`'s limits."""

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


def listen(
    home: Path,
    project: Path | None,
    host: str,
    port: int,
    token: str | None,
    limits: Limits | None = None,
    store: Path | None = None,
) -> Listening:
    """The console bound to `host`:`port` (0: any free port), not yet serving."""
    from waitress.server import BaseWSGIServer, create_server

    from trainstack.ui.app import UiConfig, create_app

    limits = limits or Limits()
    loopback = is_loopback(host)
    if token is not None and len(token) < 16:
        raise UserError("--token: use at least 16 characters", hint="or leave it out: one is made")
    if not loopback and token is None:
        token = secrets.token_urlsafe(24)
    config = UiConfig(home=home, project=project, token=token, loopback=loopback, store=store)
    app = create_app(config)
    try:
        server = create_server(
            app, host=host, port=port, threads=THREADS, ident="trainstack", **limits.adjustments()
        )
    except OSError as err:
        raise _bind_error(host, port, err) from None
    channel = bounded(limits)
    sockets = getattr(server, "map", {server: server}).values()  # one server, or one per address
    for each in sockets:
        if isinstance(each, BaseWSGIServer):
            each.channel_class = channel
    bound = int(getattr(server, "effective_port", port))
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/" + (f"?token={quote(token, safe='')}" if token else "")
    return Listening(url, server, loopback)


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
    if not listening.loopback:
        # waitress serves no TLS: said loudly rather than left for the user to discover.
        echo(
            "  WARNING: plain HTTP off this machine: the token and every page cross the network "
            "unencrypted. Serve on 127.0.0.1 and reach it through `ssh -L PORT:127.0.0.1:PORT`, "
            "or put a TLS-terminating proxy in front (docs/ui.md)"
        )
    echo("  Ctrl-C stops it")
    try:
        listening.server.run()
    except KeyboardInterrupt:
        echo("trainstack ui: stopped")
    finally:
        listening.server.close()
