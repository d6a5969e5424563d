"""A team scope's credential: a bound, expiring ServiceAccount token, and its expiry checked.

``trainstack scope publish`` mints the team's token through the Kubernetes TokenRequest API
(``serviceaccounts/token`` of the team's ``trainstack-runner``) with the platform admin's
credentials. Such a token is a signed JWT the API server validates on every request: it lapses at
its expiry, dies with the ServiceAccount, and is bound to a Secret without data
(``trainstack-runner-scope``) that publish deletes and recreates each time, so publishing again
revokes the previous token at once instead of leaving it valid until it expires. No Secret in the
cluster holds the token itself.

The expiry the scope records is the API server's answer (``status.expirationTimestamp``), not
what was asked: the server shortens a request past ``--service-account-max-token-expiration``.
Every reader of a scope (deploy, status, logs, wait, destroy) checks it first: an expired scope
is one error that names the command that renews it, one close to expiry a warning.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from trainstack import platformnames as names
from trainstack.errors import UserError
from trainstack.humanize import human_seconds

if TYPE_CHECKING:
    from trainstack.deploy.kube import Cluster, ClusterAccess

# Under this much validity left, every reader of the scope warns: a day leaves the admin time to
# publish again before the team is locked out.
WARN_BEFORE = timedelta(hours=24)


@dataclass(frozen=True)
class Minted:
    """A token the API server issued, with the expiry it granted (RFC 3339, as it answered)."""

    token: str
    expires: str


def renew_command(env: str, team: str) -> str:
    return f"trainstack scope publish --env {env} --team {team}"


def mint(admin: ClusterAccess, namespace: str, hours: int) -> Minted:
    """A token for ``namespace``'s runner, valid ``hours`` unless the API server grants less,
    bound to a freshly created anchor Secret (the previous one deleted: its token dies)."""
    from kubernetes.client import CoreV1Api

    from trainstack.deploy.apijson import Reader
    from trainstack.deploy.kube import Cluster

    cluster = Cluster(admin)
    anchor = f"Secret {namespace}/{names.SCOPE_TOKEN_ANCHOR}"
    cluster.call(
        anchor,
        lambda api, limits: CoreV1Api(api).delete_namespaced_secret(
            names.SCOPE_TOKEN_ANCHOR, namespace, _preload_content=False, _request_timeout=limits
        ),
        missing_ok=True,
    )
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": names.SCOPE_TOKEN_ANCHOR,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "trainstack"},
        },
    }
    created = cluster.call(
        anchor,
        lambda api, limits: CoreV1Api(api).create_namespaced_secret(
            namespace, body, _preload_content=False, _request_timeout=limits
        ),
    )
    read = Reader(anchor)
    uid = read.text(read.obj((created or {}).get("metadata"), "metadata").get("uid"), "uid")
    if not uid:
        raise read.error("metadata.uid", "the created Secret has no uid")
    return _request(cluster, namespace, hours, uid)


def _request(cluster: Cluster, namespace: str, hours: int, uid: str) -> Minted:
    from kubernetes.client import CoreV1Api

    from trainstack.deploy.apijson import Reader

    what = f"a token for ServiceAccount {namespace}/{names.RUNNER_ACCOUNT}"
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        # No audiences: the API server's own, so the token authenticates to it and nothing else.
        "spec": {
            "expirationSeconds": hours * 3600,
            "boundObjectRef": {
                "apiVersion": "v1",
                "kind": "Secret",
                "name": names.SCOPE_TOKEN_ANCHOR,
                "uid": uid,
            },
        },
    }
    answer = cluster.call(
        what,
        lambda api, limits: CoreV1Api(api).create_namespaced_service_account_token(
            names.RUNNER_ACCOUNT,
            namespace,
            request,
            _preload_content=False,
            _request_timeout=limits,
        ),
    )
    read = Reader(what)
    status = read.obj((answer or {}).get("status"), "status")
    token = read.text(status.get("token"), "status.token")
    expires = read.text(status.get("expirationTimestamp"), "status.expirationTimestamp")
    if not token:
        raise read.error("status.token", "no token issued")
    if expires is None or parse_expiry(expires) is None:
        raise read.error("status.expirationTimestamp", f"expected an RFC 3339 time, {expires!r}")
    return Minted(token, expires)


def parse_expiry(value: object) -> datetime | None:
    """An RFC 3339 time (the API's ``metav1.Time``) as an aware datetime; None if it is not one."""
    if not isinstance(value, str) or not value or len(value) > 64:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def token_record(team: str, namespace: str, minted: Minted) -> dict[str, str]:
    """The scope's non-secret ``teamToken`` output."""
    return {
        "team": team,
        "namespace": namespace,
        "serviceAccount": f"{namespace}/{names.RUNNER_ACCOUNT}",
        "expires": minted.expires,
    }


def check_scope(
    outputs: Mapping[str, Any],
    *,
    env: str,
    stack: str,
    team: str | None,
    now: datetime | None = None,
) -> None:
    """Refuse a scope whose token has expired; warn on stderr when it expires within a day, or
    when the scope does not say when (damaged, or published before scopes held expiring tokens).
    ``team``: the team the caller expects, used when the scope's record does not name one."""
    record = outputs.get(names.OUT_TEAM_TOKEN)
    record = record if isinstance(record, Mapping) else {}
    named = record.get("team")
    who = named if isinstance(named, str) and named else (team or "?")
    renew = f"a platform admin runs `{renew_command(env, who)}`"
    expires = parse_expiry(record.get("expires"))
    if expires is None:
        _warn(
            f"team {who}'s scope {stack!r} does not say when its credential expires "
            f"({_unknown_why(outputs)}); it is used as it is, and the cluster will refuse it if "
            f"it has expired. To renew it, {renew}"
        )
        return
    left = expires - (now or datetime.now(UTC))
    shown = expires.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    if left <= timedelta(0):
        raise UserError(
            f"team {who}'s credential in scope {stack!r} expired at {shown} "
            f"({human_seconds(-left.total_seconds())} ago): the cluster refuses it",
            hint=f"{renew} (with the platform's passphrase, and the team's in "
            "$TRAINSTACK_TEAM_PASSPHRASE), then try again",
        )
    if left < WARN_BEFORE:
        _warn(
            f"team {who}'s credential in scope {stack!r} expires at {shown} "
            f"(in {human_seconds(left.total_seconds())}); before then, {renew}"
        )


def _unknown_why(outputs: Mapping[str, Any]) -> str:
    if names.OUT_TEAM_TOKEN not in outputs:
        return f"no {names.OUT_TEAM_TOKEN} output: published before scopes held expiring tokens"
    return f"its {names.OUT_TEAM_TOKEN}.expires is not an RFC 3339 time"


def _warn(message: str) -> None:
    # stderr, resolved now: standard output may be machine-read (--format json)
    print(f"warning: {message}", file=sys.stderr)
