"""Where trainstack keeps its local state: the run registry, run directories, cached venvs, the
deployed-run index, the run stacks' file backend and passphrase.

One root per user, whatever directory trainstack runs in: `--home DIR`, else `$TRAINSTACK_HOME`,
else the XDG state directory (`$XDG_STATE_HOME/trainstack`, `~/.local/state/trainstack`). One
root for all of it so that `--home` moves everything together and tests isolate themselves with
one variable.
"""

from __future__ import annotations

import os
from pathlib import Path

from trainstack.envnames import HOME_ENV as HOME_ENV

XDG_STATE_ENV = "XDG_STATE_HOME"


def state_home(override: str | Path | None = None) -> Path:
    """The state root: `override`, else `$TRAINSTACK_HOME`, else the XDG state dir, absolute."""
    chosen = override or os.environ.get(HOME_ENV)
    if not chosen:
        # XDG Base Directory spec: a relative $XDG_STATE_HOME is invalid and must be ignored.
        xdg = os.environ.get(XDG_STATE_ENV, "")
        base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path("~/.local/state")
        chosen = base / "trainstack"
    return Path(chosen).expanduser().absolute()


def registry_path(home: Path) -> Path:
    return home / "registry.db"


def runs_root(home: Path) -> Path:
    return home / "runs"


def venvs_root(home: Path) -> Path:
    return home / "venvs"
