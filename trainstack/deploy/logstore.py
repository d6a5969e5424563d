"""A deployed run's replica logs after its pods are gone: read back from the artifact store the
launcher shipped them to (trainstack.infra.logplace says where; the run's stack records it as
its `logs` output).

- OSS: through Alibaba Cloud's `oss2` SDK, with the credentials in this shell's environment
  (`ALIBABA_CLOUD_ACCESS_KEY_ID`, `ALIBABA_CLOUD_ACCESS_KEY_SECRET` and, for the STS token of the
  team's RAM role, `ALIBABA_CLOUD_SECURITY_TOKEN`: the names the aliyun CLI and SDKs read). The
  team's role may read `<bucket>/<team>/`, which holds its runs' logs. The objects are copied
  into a folder here and read like a local run's logs.
- A claim (pvc://) or a NAS (nas://): where the store is mounted on this machine, `--store
  DIR` (the claim's or the NAS export's root: kind's local-path folder, an NFS mount). Nothing is
  copied; no file is read through a link out of DIR.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from trainstack.errors import ConfigError, NotFoundError, UserError

ACCESS_KEY_ENV = "ALIBABA_CLOUD_ACCESS_KEY_ID"
SECRET_ENV = "ALIBABA_CLOUD_ACCESS_KEY_SECRET"
TOKEN_ENV = "ALIBABA_CLOUD_SECURITY_TOKEN"
ENDPOINT_ENV = "TRAINSTACK_OSS_ENDPOINT"
# Only replica logs and their rotations are fetched: `<role>-<index>.log[.N]`.
_MAX_OBJECTS = 10000


@dataclass(frozen=True)
class StoredLogs:
    folder: Path  # holds <role>-<index>.log and its rotations
    root: Path  # no log is read through a link out of it
    uri: str


class Bucket(Protocol):
    """What is used of `oss2.Bucket` (a test gives a bucket on disk)."""

    def list_objects_v2(self, prefix: str = "", continuation_token: str = "") -> Any: ...

    def get_object_to_file(self, key: str, filename: str) -> Any: ...


def locate(
    uri: str,
    *,
    mount: Path | None,
    into: Path,
    endpoint: str | None = None,
    bucket: Bucket | None = None,
    records: bool = False,
    replica: Callable[[str], bool] | None = None,
) -> StoredLogs:
    """The run's logs folder at `uri`, readable here: in place under `mount` (pvc://, nas://),
    or copied from OSS into `into` (the replicas' logs; with `records`, the launchers' restart
    records `<role>-<index>.restarts.jsonl` instead; with `replica`, only the files whose
    `<role>-<index>` it keeps: `logs --role R` fetches R's logs, not the whole run's)."""
    scheme, _, rest = uri.partition("://")
    host, _, path = rest.partition("/")
    if scheme == "oss":
        kind = is_record_name if records else is_log_name

        def wanted(leaf: str) -> bool:
            return kind(leaf) and (replica is None or replica(leaf.partition(".")[0]))

        return _from_oss(uri, host, path, into, endpoint, bucket, wanted, records=records)
    if scheme not in ("pvc", "nas"):
        raise ConfigError(f"the run's logs are at {uri!r}, which trainstack cannot read back")
    if mount is None:
        raise UserError(
            f"the run's pods are gone; its logs are in the artifact store at {uri}",
            hint=f"mount the {'claim' if scheme == 'pvc' else 'NAS export'} {host!r} on this "
            "machine and pass its root as --store DIR (docs/deploy.md, 'Logs after the pods')",
        )
    relative = PurePosixPath(path)
    if ".." in relative.parts or relative.is_absolute():
        raise ConfigError(f"the run's logs place {uri!r} leaves the store")
    folder = mount.joinpath(*relative.parts)
    if not folder.is_dir():
        raise NotFoundError(
            f"no logs at {uri}: {folder} is not a folder",
            hint=f"is {mount} the root of {scheme}://{host}/? (the run may also have "
            "ended before its first line)",
        )
    return StoredLogs(folder, mount, uri)


def _from_oss(
    uri: str,
    name: str,
    prefix: str,
    into: Path,
    endpoint: str | None,
    bucket: Bucket | None,
    wanted: Callable[[str], bool],
    *,
    records: bool,
) -> StoredLogs:
    if bucket is None:
        bucket = _oss_bucket(name, endpoint)
    into.mkdir(parents=True, exist_ok=True)
    fetched = 0
    others: set[str] = set()  # the replicas with logs there that were not asked for
    for key in _keys(bucket, prefix):
        leaf = key[len(prefix) :]
        if "/" in leaf or not wanted(leaf):
            if "/" not in leaf and is_log_name(leaf):
                others.add(leaf.partition(".")[0])
            continue  # only what was asked for; never a path out of `into`
        _call(lambda k=key, f=str(into / leaf): bucket.get_object_to_file(k, f), uri)
        fetched += 1
    if not fetched and not records:
        if others:
            raise NotFoundError(
                f"no log of that replica at {uri}",
                hint=f"its replicas: {', '.join(sorted(others))}",
            )
        raise NotFoundError(
            f"no logs at {uri}",
            hint="the run may have ended before its first line, or its logs expired "
            "(the platform's logRetentionDays; spec.keepLogs keeps them)",
        )
    return StoredLogs(into, into, uri)


def _keys(bucket: Bucket, prefix: str) -> Iterator[str]:
    token = ""
    seen = 0
    while True:
        page = _call(lambda t=token: bucket.list_objects_v2(prefix=prefix, continuation_token=t))
        for obj in page.object_list:
            seen += 1
            if seen > _MAX_OBJECTS:
                return
            yield str(obj.key)
        if not page.is_truncated:
            return
        token = page.next_continuation_token


def is_log_name(leaf: str) -> bool:
    """`<role>-<index>.log` or one of its rotations (`.log.N`)."""
    stem, dot, tail = leaf.rpartition(".log")
    return bool(stem and dot) and (tail == "" or (tail[:1] == "." and tail[1:].isdigit()))


def is_record_name(leaf: str) -> bool:
    """A launcher's `<role>-<index>.restarts.jsonl`."""
    from trainstack.launcher import EVENTS_SUFFIX

    return leaf.endswith(EVENTS_SUFFIX) and len(leaf) > len(EVENTS_SUFFIX)


def has_credentials() -> bool:
    return bool(os.environ.get(ACCESS_KEY_ENV) and os.environ.get(SECRET_ENV))


def _oss_bucket(name: str, endpoint: str | None) -> Bucket:
    key, secret = os.environ.get(ACCESS_KEY_ENV), os.environ.get(SECRET_ENV)
    if not key or not secret:
        raise UserError(
            f"reading the run's logs from OSS bucket {name!r} needs credentials: "
            f"${ACCESS_KEY_ENV} and ${SECRET_ENV} are not set",
            hint="export an AccessKey that may assume the team's RAM role (the platform's "
            f"teamRoles output) and that role's STS token in ${TOKEN_ENV} (docs/deploy.md)",
        )
    if not endpoint:
        raise ConfigError(
            f"no OSS endpoint is known for bucket {name!r}",
            hint=f"set ${ENDPOINT_ENV}, e.g. https://oss-cn-hangzhou.aliyuncs.com",
        )
    import oss2

    token = os.environ.get(TOKEN_ENV)
    auth = oss2.StsAuth(key, secret, token) if token else oss2.Auth(key, secret)
    bucket: Bucket = oss2.Bucket(auth, endpoint, name)
    return bucket


def oss_endpoint(region: str | None) -> str | None:
    """The OSS endpoint logs are read through: $TRAINSTACK_OSS_ENDPOINT, else the region's
    public one (reading from inside the VPC, set the `-internal` one)."""
    if os.environ.get(ENDPOINT_ENV):
        return os.environ[ENDPOINT_ENV]
    return f"https://oss-{region}.aliyuncs.com" if region else None


def _call(fn: Any, uri: str = "") -> Any:
    try:
        import oss2.exceptions as oss_errors
    except ImportError:  # a test's bucket on disk
        return fn()
    try:
        return fn()
    except oss_errors.OssError as err:
        status = getattr(err, "status", "?")
        code = getattr(err, "code", "") or type(err).__name__
        raise UserError(
            f"OSS refused reading the run's logs{' at ' + uri if uri else ''}: {status} {code}",
            hint="AccessDenied: the credentials are not the run's team's (its RAM role may "
            "read only <bucket>/<team>/); NoSuchBucket: check $TRAINSTACK_OSS_ENDPOINT",
        ) from None
