"""Who records a run: the user name the registry keeps with it (`created_by`), for the console's
"only mine" filter and its run pages."""

from __future__ import annotations

import getpass
import os


def current_user() -> str:
    """This process's user name as `getpass` finds it ($LOGNAME, $USER, … or the password
    database); a user the system cannot name (a container's bare uid) is `uid <n>`."""
    try:
        name = getpass.getuser().strip()
    except (OSError, KeyError):
        name = ""
    return name or f"uid {os.getuid()}"
