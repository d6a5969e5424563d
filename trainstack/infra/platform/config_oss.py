"""kubeconfig mode: the OSS AccessKeys oss:// volumes mount with, one per team, and the buckets
they may reach.

The OSS CSI driver mounts with the AccessKey of the Secret a PV names, and a team's credential
reads every Secret of its namespace: whatever that key reaches, the team reaches. So each team
gets a key of its own (``trainstack:ossAccessKeys``, a secret object ``{<team>: {id, secret}}``)
whose RAM user's policy names only ``<bucket>/<team>/`` (``teamOssPolicies``, derived from
``trainstack:ossBuckets``). The one shared key of before (``ossAccessKeyId``/``ossAccessKeySecret``)
is the same thing only while there is one team; with more it would hand each team every other
team's prefix, so it is refused. Values are only ever checked here, never kept or shown: the
program reads them again, as secrets, where it puts them into a Secret (osssecret.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trainstack.errors import ConfigError
from trainstack.infra.configread import Section

# The one AccessKey of an environment with a single team: both keys or neither, each a secret.
OSS_ACCESS_KEY_KEYS = ("ossAccessKeyId", "ossAccessKeySecret")
TEAM_KEYS = "ossAccessKeys"
KEY_FIELDS = ("id", "secret")  # each team's entry in TEAM_KEYS
BUCKETS = "ossBuckets"
KUBECONFIG_ONLY = (TEAM_KEYS, BUCKETS)
# OSS's bucket naming rule: 3-63 characters, lower-case letters, digits and hyphens, starting and
# ending with a letter or digit.
BUCKET_NAME = r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]"
ACK_REFUSALS = {
    k: "not used when trainstack:mode is ack: OSS volumes mount with each team's RAM role "
    "(RRSA), no AccessKey"
    for k in (*OSS_ACCESS_KEY_KEYS, TEAM_KEYS)
}


@dataclass(frozen=True)
class OssKeys:
    """Which team namespaces get the ``trainstack-oss`` Secret, and from which config."""

    teams: tuple[str, ...]  # in trainstack:teams order; a team not here has no OSS credential
    shared: bool = False  # the values are OSS_ACCESS_KEY_KEYS' (one team), not TEAM_KEYS'


def team_key_commands(stack: str, team: str) -> str:
    """How to give one team its AccessKey."""
    return "; ".join(
        f"pulumi config set --secret --path 'trainstack:{TEAM_KEYS}.{team}.{field}' <{field}> "
        f"--stack {stack}"
        for field in KEY_FIELDS
    )


def _migration(stack: str, teams: Sequence[str]) -> str:
    per_team = "; ".join(team_key_commands(stack, t) for t in teams)
    remove = "; ".join(
        f"pulumi config rm trainstack:{k} --stack {stack}" for k in OSS_ACCESS_KEY_KEYS
    )
    return (
        f"create one RAM user and AccessKey per team, each with its policy from the "
        f"teamOssPolicies output (set trainstack:{BUCKETS}; docs/platform.md, 'OSS in "
        f"kubeconfig mode'), then: {per_team}; {remove}"
    )


def load_oss_keys(main: Section, source: str, stack: str, teams: Sequence[str]) -> OssKeys | None:
    """The checked OSS credentials of a kubeconfig-mode stack; None: it has none."""
    shared = _shared_key(main, stack)
    per_team = _team_keys(main, stack, teams) if main.has(TEAM_KEYS) else None
    if shared and per_team is not None:
        raise ConfigError(
            f"{source}: {main.key(OSS_ACCESS_KEY_KEYS[0])}: expected either the per-team "
            f"{main.key(TEAM_KEYS)} or the one shared AccessKey, but both are set",
            hint="; ".join(
                f"pulumi config rm trainstack:{k} --stack {stack}" for k in OSS_ACCESS_KEY_KEYS
            ),
        )
    if shared and len(teams) > 1:
        raise ConfigError(
            f"{source}: {main.key(OSS_ACCESS_KEY_KEYS[0])}: expected an AccessKey per team "
            f"({main.key(TEAM_KEYS)}) in an environment of {len(teams)} teams "
            f"({', '.join(teams)}), but the one shared AccessKey is set: every team namespace "
            "would hold a key that reaches every other team's prefix",
            hint=_migration(stack, teams),
        )
    if shared:
        return OssKeys(tuple(teams), shared=True)
    return per_team if per_team is not None and per_team.teams else None


def _shared_key(main: Section, stack: str) -> bool:
    """Whether the stack sets the one shared AccessKey: both keys, as secrets, or neither."""
    if not any(main.has(k) for k in OSS_ACCESS_KEY_KEYS):
        return False
    how = "; ".join(
        f"pulumi config set --secret trainstack:{k} <{k}> --stack {stack}"
        for k in OSS_ACCESS_KEY_KEYS
    )
    for key in OSS_ACCESS_KEY_KEYS:  # the missing one, or one set in plain text, is the error
        main.require_secret_key(key, how)
    return True


def _team_keys(main: Section, stack: str, teams: Sequence[str]) -> OssKeys:
    how = team_key_commands(stack, "<team>")
    keys = main.secret_section(TEAM_KEYS, how)
    given = []
    for team in teams:
        if not keys.has(team):
            continue
        entry = keys.section(team)
        for field in KEY_FIELDS:
            entry.string(field, pattern=r"\S+", what="an AccessKey's " + field)
        entry.finish()
        given.append(team)
    keys.finish()  # a key that names no team: a typo, said with the teams it could be
    return OssKeys(tuple(given))


def load_buckets(main: Section) -> tuple[str, ...]:
    """``trainstack:ossBuckets``: the buckets team keys may reach (() when not named)."""
    return main.string_list(
        BUCKETS, [], pattern=BUCKET_NAME, what="OSS bucket names ([a-z0-9-], 3-63 characters)"
    )
