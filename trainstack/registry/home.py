"""Where trainstack keeps its local state: the run registry, run directories, cached venvs.

One root for all of it so that `--home DIR` (or `TRAINSTACK_HOME`) moves everything together and
tests can isolate themselves with one variable.
"""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "TRAINSTACK_HOME"
DEFAULT_HOME = ".trainstack"


def state_home(override: str | Path | None = None) -> Path:
    """The state root: `override`, else `$TRAINSTACK_HOME`, else `./.trainstack`, absolute."""
    chosen = override or os.environ.get(HOME_ENV) or DEFAULT_HOME
    return Path(chosen).expanduser().absolute()


def registry_path(home: Path) -> Path:
    return home / "registry.db"


def runs_root(home: Path) -> Path:
    return home / "runs"


def venvs_root(home: Path) -> Path:
    return home / "venvs"
