"""Where trainstack keeps its local state: the run registry, run directories, cached venvs, the
deployed-run index, the run stacks' file backend and passphrase.

One root per user, whatever directory trainstack runs in: `--home DIR`, else `$TRAINSTACK_HOME`,
else the XDG state directory (`$XDG_STATE_HOME/trainstack`, `~/.local/state/trainstack`). One
root for all of it so that `--home` moves everything together and tests isolate themselves with
one variable.
"""

from __future__ import annotations

from pathlib import Path

from trainstack.envnames import HOME_ENV as HOME_ENV
from trainstack.statehome import XDG_STATE_ENV as XDG_STATE_ENV
from trainstack.statehome import state_home as state_home


def registry_path(home: Path) -> Path:
    return home / "registry.db"


def runs_root(home: Path) -> Path:
    return home / "runs"


def venvs_root(home: Path) -> Path:
    return home / "venvs"
