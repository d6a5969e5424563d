"""Outputs that persist: every output a run leaves unbound, and its ``$METRICS``, go to the
platform's artifact store at ``<store>/<team>/<run>/<output>/`` (metrics: ``.../_metrics/``;
channel names cannot start with ``_``, so it never meets an output's directory; the replicas'
logs: ``.../logs/`` or an expiring place, trainstack.infra.logplace, so an unbound output named
``logs`` is refused).

On a cluster an unbound output used to be a directory inside the pod, lost with it. Rendering
for an environment now either gives each output a persistent place or fails, naming the outputs
and what to do — it never renders an output that would vanish.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from trainstack import platformnames as names
from trainstack.errors import ConfigError
from trainstack.infra.logplace import KEPT_DIR, log_place
from trainstack.spec.model import Binding, FrozenMap, Run
from trainstack.spec.schemes import STORE_SCHEMES
from trainstack.spec.values import binding

if TYPE_CHECKING:
    from trainstack.infra.run.options import PlatformOutputs

METRICS_DIR = "_metrics"


def artifact_store(platform: PlatformOutputs, env: str) -> str | None:
    """The platform's artifact store URI (with a trailing '/'), or None when it exports none."""
    text = platform.artifact_store
    if not text:
        return None
    if text.partition("://")[0] not in STORE_SCHEMES:
        raise ConfigError(
            f"environment {env!r}: the platform's {names.OUT_ARTIFACT_STORE} "
            f"output {text!r} is not an "
            + ", ".join(f"{scheme}://" for scheme in STORE_SCHEMES[:-1])
            + f" or {STORE_SCHEMES[-1]}:// URI"
        )
    return text if text.endswith("/") else text + "/"


def team_of(platform: PlatformOutputs, namespace: str) -> str:
    """The team whose namespace the run goes to (the store is laid out by team)."""
    return next(
        (team for team, ns in sorted(platform.namespaces.items()) if ns == namespace), namespace
    )


def place(store: str, team: str, run: str, leaf: str) -> Binding:
    return binding(f"{store}{team}/{run}/{leaf}/", kind="directory")


def persist_outputs(run: Run, store: str | None, team: str, env: str) -> Run:
    """``run`` with every unbound output bound into the store (declaration order kept)."""
    unbound = [c.name for c in run.component.outputs if c.name not in run.outputs]
    if unbound and store is None:
        where = str(run.source) if run.source else run.name
        raise ConfigError(
            f"{where}: spec.outputs: {', '.join(unbound)} "
            f"{'has' if len(unbound) == 1 else 'have'} no binding and environment {env!r} "
            f"exports no artifact store ({names.OUT_ARTIFACT_STORE}), so "
            f"{'it' if len(unbound) == 1 else 'they'} would be lost with the pods",
            hint="bind each output (oss://, nas://, pvc://) in the run, or deploy a platform "
            f"that exports {names.OUT_ARTIFACT_STORE}",
        )
    if not unbound:
        return run
    assert store is not None
    if KEPT_DIR in unbound and log_place(store, team, run.name, keep=run.keep_logs).uri == (
        f"{store}{team}/{run.name}/{KEPT_DIR}/"
    ):
        where = str(run.source) if run.source else run.name
        raise ConfigError(
            f"{where}: spec.outputs: output {KEPT_DIR!r} has no binding, and its place in the "
            f"store ({store}{team}/{run.name}/{KEPT_DIR}/) is where the replicas' logs go",
            hint=f"bind output {KEPT_DIR!r} to a place of its own (oss://, nas://, pvc://), "
            "or give the component's output another name",
        )
    bound = {
        c.name: run.outputs.get(c.name) or place(store, team, run.name, c.name)
        for c in run.component.outputs
    }
    extra = {k: v for k, v in run.outputs.items() if k not in bound}
    return replace(run, outputs=FrozenMap({**bound, **extra}))


def output_uris(run: Run) -> dict[str, str]:
    """Where each output of the (completed) run lands, for the registry."""
    return {name: b.uri for name, b in run.outputs.items()}
