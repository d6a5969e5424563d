"""How the console is served: the state home, the project, the token, whether it is bound to a
loopback address, whether over TLS. A module of its own, so the routes read it without
importing the app."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class UiConfig:
    home: Path
    project: Path | None = None
    token: str | None = None  # every request must carry it when set
    loopback: bool = True  # bound to a loopback address: only a loopback Host is answered
    store: Path | None = None  # where a claim or NAS artifact store is mounted (`--store`)
    tls: bool = False  # served over HTTPS: the token cookie is sent over HTTPS only
