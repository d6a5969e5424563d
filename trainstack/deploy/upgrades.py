"""A deployed job whose run is unchanged but whose rendering is not (the run's metadata, or a
newer trainstack): deploy leaves it as it is unless asked (``--upgrade``), and plan says which.
A run's identity is what its user wrote (infra/run/identity.py). Light on imports: ``plan``
reads it without the registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainstack.deploy.index import StackEntry


def held_back(
    previous: StackEntry | None, identity: str, digest: str, *, upgrade: bool, command: str
) -> str | None:
    """Why this deploy leaves the deployed job as it is although what trainstack renders for the
    run differs from what the stack holds, or None (deploy it). A run's identity is what its user
    wrote (infra/run/identity.py): a change of its metadata alone, or of trainstack's rendering,
    restarts nobody's training unless the user asks (``command``: the deploy with ``--upgrade``).
    """
    if previous is None or upgrade or previous.spec_hash in (None, digest):
        return None
    if previous.identity == identity:
        return (
            f"run {previous.run!r} is unchanged (its spec, component, parameters, bindings and "
            "image are what was deployed): its job was left as it is, although what trainstack "
            "renders for it now differs from what its stack holds (the run's metadata — "
            "experiment, tags, description — or a newer trainstack's rendering). "
            f"`{command}` deploys that rendering and restarts the job"
        )
    if previous.identity is None:
        return (
            f"run {previous.run!r} was deployed by a trainstack that recorded no identity for "
            "it, and what this one renders differs from what its stack holds: whether the run "
            "itself changed cannot be told, so its job was left as it is. "
            f"`{command}` deploys this rendering and restarts the job"
        )
    return None


def against_deployed(entry: StackEntry, identity: str, digest: str) -> str:
    """What ``deploy`` would do to the deployed ``entry`` of a run planned with ``identity`` and
    rendered to ``digest`` (``plan``'s line about it)."""
    where = f"deployed as stack {entry.stack}"
    if entry.identity is None and entry.spec_hash != digest:
        return (
            f"{where} by a trainstack that recorded no identity: deploy leaves its job as it "
            "is; `deploy --upgrade` would restart it with this rendering"
        )
    if entry.identity not in (None, identity):
        return f"{where}: the run changed, so deploy replaces its job (a restart)"
    if entry.spec_hash != digest:
        return (
            f"{where}: the run is unchanged, but trainstack renders it differently (its "
            "metadata, or a newer trainstack): deploy leaves its job as it is; "
            "`deploy --upgrade` would restart it"
        )
    return f"{where}: unchanged, deploy leaves its job as it is"
