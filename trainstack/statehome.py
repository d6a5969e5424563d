"""The state home's root: `override`, else `$TRAINSTACK_HOME`, else the XDG state directory.

Kept apart from the registry (`registry/home.py` names what lives under it) so that what only
needs the folder, the plan cache of the platform's outputs, does not import the registry and
SQLite with it.
"""

from __future__ import annotations

import os
from pathlib import Path

from trainstack.envnames import HOME_ENV

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
