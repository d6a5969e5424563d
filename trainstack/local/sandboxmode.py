"""How a local run isolates its replicas (`--sandbox`): each one a host of its own in Linux
namespaces (trainstack.local.podns), or processes sharing this machine's network and hostname
(trainstack.local.ports.SharedLoopback). `auto` takes namespaces where this machine allows them
and says why when it does not."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from trainstack.errors import UserError
from trainstack.local import podns


class SandboxMode(enum.StrEnum):
    AUTO = "auto"
    NAMESPACES = "namespaces"
    PROCESSES = "processes"


DEFAULT = SandboxMode.AUTO


@dataclass(frozen=True)
class Choice:
    mode: SandboxMode  # never AUTO
    why: str
    # processes because namespaces could not be had: said as the run starts, not only at its end
    fallback: bool = False

    def describe(self) -> str:
        return f"{self.mode} ({self.why})"


def choose(requested: SandboxMode | None, probe: Callable[[], str | None] = podns.probe) -> Choice:
    """The mode a run gets (`requested` None: `DEFAULT`). `probe` says why namespaces cannot be
    had (None: they can); asked for by name and unavailable, they are an error, since the user
    wants what a cluster does."""
    requested = DEFAULT if requested is None else requested
    if requested is SandboxMode.PROCESSES:
        return Choice(SandboxMode.PROCESSES, "--sandbox processes")
    refused = probe()
    if requested is SandboxMode.NAMESPACES:
        if refused is not None:
            packages = " ".join(sorted(set(podns.TOOLS.values())))
            raise UserError(
                f"--sandbox namespaces: {refused}",
                hint=f"install the missing packages (apt-get install {packages}; "
                "tools/install-sandbox), allow user namespaces (sysctl "
                "kernel.unprivileged_userns_clone=1, user.max_user_namespaces), or run with "
                "--sandbox processes",
            )
        return Choice(SandboxMode.NAMESPACES, "--sandbox namespaces")
    if refused is not None:
        return Choice(SandboxMode.PROCESSES, f"namespaces unavailable: {refused}", fallback=True)
    return Choice(SandboxMode.NAMESPACES, "this machine allows namespaces")
