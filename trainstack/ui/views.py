"""What every console page shows the same way: links with query strings, times, a run's status
as it stands (a local run whose runner is gone reads `interrupted`, as `runs list` would record
it; the console only reads, so it shows that without writing it)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from trainstack.registry.liveness import RunnerIdentity, runner_alive
from trainstack.registry.model import RunKind, RunRecord, RunStatus


@dataclass(frozen=True)
class Link:
    text: str
    href: str
    current: bool = False


@dataclass(frozen=True)
class Option:
    value: str
    text: str
    selected: bool


def url(path: str, args: Mapping[str, str | list[str]] | None = None) -> str:
    """`path` with the non-empty `args` as its query string (a list: the key repeated)."""
    pairs: list[tuple[str, str]] = []
    for k, v in (args or {}).items():
        pairs.extend((k, item) for item in ([v] if isinstance(v, str) else v) if item)
    return path + ("?" + urlencode(pairs) if pairs else "")


def run_href(run_id: str) -> str:
    return "/runs/" + quote(run_id, safe="")


def when(t: float | None) -> str:
    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def status_of(r: RunRecord) -> RunStatus:
    """The run's status now: a local run still recorded pending or running whose runner process
    is gone has been interrupted (`runs list` records that; the console only shows it)."""
    if r.kind is not RunKind.LOCAL or r.status.finished:
        return r.status
    if r.runner_pid is None:
        return RunStatus.INTERRUPTED
    alive = runner_alive(RunnerIdentity(r.runner_pid, r.runner_started_at or 0.0))
    return r.status if alive else RunStatus.INTERRUPTED


def options(values: tuple[str, ...], chosen: str, *, any_text: str = "any") -> tuple[Option, ...]:
    return (Option("", any_text, not chosen), *(Option(v, v, v == chosen) for v in values))
