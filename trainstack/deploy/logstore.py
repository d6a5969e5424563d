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

from trainstack.envnames import OSS_ENDPOINT_ENV as ENDPOINT_ENV
from trainstack.errors import ConfigError, NotFoundError, UserError
from trainstack.excerpt import excerpt
from trainstack.regularfile import describe
from trainstack.spec.pathlimits import too_long

ACCESS_KEY_ENV = "ALIBABA_CLOUD_ACCESS_KEY_ID"
SECRET_ENV = "ALIBABA_CLOUD_ACCESS_KEY_SECRET"
TOKEN_ENV = "ALIBABA_CLOUD_SECURITY_TOKEN"
# Only replica logs and their rotations are fetched: `<role>-<index>.log[.N]`.
MAX_OBJECTS = 10000


@dataclass(frozen=True)
class StoredLogs:
    folder: Path  # holds <role>-<index>.log and its rotations
    root: Path  # no log is read through a link out of it
    uri: str
    cut: bool = False  # the listing held more than MAX_OBJECTS objects: those past it not read


class Bucket(Protocol):
    """What is used of `oss2.Bucket` (a test gives a bucket on disk)."""

    def list_objects_v2(self, prefix: str = "", continuation_token: str = "") -> Any: ...

    def get_object_to_file(self, key: str, filename: str) -> Any: ...

    def put_object(self, key: str, data: bytes) -> Any: ...


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
    folder, mount = _mounted(uri, mount, "the run's pods are gone; its logs are")
    if not folder.is_dir():
        raise NotFoundError(
            f"no logs at {uri}: {folder} is not a folder",
            hint=f"is {mount} the root of {scheme}://{host}/? (the run may also have "
            "ended before its first line)",
        )
    return StoredLogs(folder, mount, uri)


# A run's own record beside its logs (trainstack.metrics.podtimes' pods.json) is small; a larger
# object there is not one trainstack wrote.
RECORD_LIMIT = 4 << 20


def read_record(
    uri: str,
    leaf: str,
    *,
    mount: Path | None,
    endpoint: str | None = None,
    bucket: Bucket | None = None,
) -> str | None:
    """The text of the run's record `leaf` in its logs folder at `uri`; None where there is
    none yet. A store not readable from here is the UserError `locate` gives."""
    import tempfile

    scheme, _, rest = uri.partition("://")
    host, _, path = rest.partition("/")
    if scheme == "oss":
        bucket = bucket or _oss_bucket(host, endpoint)
        key = path + leaf
        if key not in _Listing(bucket, key, uri).listed():
            return None
        with tempfile.TemporaryDirectory(prefix="trainstack-record-") as tmp:
            into = Path(tmp) / leaf
            _call(lambda: bucket.get_object_to_file(key, str(into)), uri)
            return _text_of(into.read_bytes(), uri, leaf)
    stored = locate_mounted(uri, mount, create=False)
    if stored is None or not os.path.lexists(stored / leaf):
        return None
    from trainstack.regularfile import read_within

    try:
        data = read_within(mount or stored, stored / leaf, RECORD_LIMIT)
    except OSError as err:
        raise UserError(f"cannot read {stored / leaf}: {describe(err)}") from None
    return _text_of(data, uri, leaf)


def write_record(
    uri: str,
    leaf: str,
    text: str,
    *,
    mount: Path | None,
    endpoint: str | None = None,
    bucket: Bucket | None = None,
) -> None:
    """Write the run's record `leaf` into its logs folder at `uri` (whole: a reader never sees
    half of it)."""
    scheme, _, rest = uri.partition("://")
    host, _, path = rest.partition("/")
    if scheme == "oss":
        bucket = bucket or _oss_bucket(host, endpoint)
        _call(lambda: bucket.put_object(path + leaf, text.encode("utf-8")), uri)
        return
    folder = locate_mounted(uri, mount, create=True)
    assert folder is not None
    from trainstack.outfile import write_file

    write_file(folder / leaf, text)


def _mounted(uri: str, mount: Path | None, what: str) -> tuple[Path, Path]:
    """(the folder `uri` names under `mount`, the mount) for a claim or NAS export; one error
    for another scheme, no mount, or a path that leaves the store. `what`: the start of the
    sentence that asks for the mount."""
    scheme, _, rest = uri.partition("://")
    host, _, path = rest.partition("/")
    if scheme not in ("pvc", "nas"):
        raise ConfigError(f"the run's logs are at {uri!r}, which trainstack cannot read back")
    if mount is None:
        raise UserError(
            f"{what} in the artifact store at {uri}",
            hint=f"mount the {'claim' if scheme == 'pvc' else 'NAS export'} {host!r} on this "
            "machine and pass its root as --store DIR (docs/deploy.md, 'Logs after the pods')",
        )
    relative = PurePosixPath(path)
    if ".." in relative.parts or relative.is_absolute():
        raise ConfigError(f"the run's logs place {uri!r} leaves the store")
    return mount.joinpath(*relative.parts), mount


def locate_mounted(uri: str, mount: Path | None, *, create: bool) -> Path | None:
    """The run's logs folder under a claim or NAS mounted at `mount`; None where it does not
    exist (and not `create`). No folder is reached through a link out of `mount`."""
    folder, mount = _mounted(uri, mount, "the run's records are")
    if create:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise UserError(f"cannot write into {folder}: {describe(err)}") from None
    elif not folder.is_dir():
        return None
    if not folder.resolve().is_relative_to(mount.resolve()):
        raise UserError(f"{folder}: a link to a place outside {mount}: not followed")
    return folder


def _text_of(data: bytes, uri: str, leaf: str) -> str:
    if len(data) > RECORD_LIMIT:
        raise UserError(
            f"{uri}{leaf}: over {RECORD_LIMIT >> 20} MiB, not a record trainstack wrote"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{uri}{leaf}: not UTF-8 text, not a record trainstack wrote") from None


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
    listing = _Listing(bucket, prefix, uri)
    for key in listing.listed():
        leaf = key[len(prefix) :]
        if "/" in leaf or not wanted(leaf):
            if "/" not in leaf and is_log_name(leaf):
                others.add(leaf.partition(".")[0])
            continue  # only what was asked for; never a path out of `into`
        _check_leaf(leaf, into, uri)
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
    return StoredLogs(into, into, uri, cut=listing.cut)


class _Listing:
    """The keys under a prefix, page by page. A continuation token seen before ends it with an
    error (as botocore's paginator stops at a repeated token): a store that answers so would
    be listed forever. Past MAX_OBJECTS keys the listing stops and says so (`cut`)."""

    def __init__(self, bucket: Bucket, prefix: str, uri: str) -> None:
        self.bucket, self.prefix, self.uri = bucket, prefix, uri
        self.cut = False

    def listed(self) -> Iterator[str]:
        token = ""
        tokens: set[str] = set()
        seen = 0
        while True:
            page = _call(lambda t=token: self._page(t), self.uri)
            for obj in page.object_list:
                seen += 1
                if seen > MAX_OBJECTS:
                    self.cut = True
                    return
                yield str(obj.key)
            if not page.is_truncated:
                return
            token = str(page.next_continuation_token or "")
            if not token or token in tokens:
                raise UserError(
                    f"OSS's listing of the run's logs at {self.uri} does not end: it gave the "
                    f"continuation token {excerpt(token)!s} {'again' if token else 'empty'}",
                    hint="the store (or a proxy before it) answers listings wrongly; "
                    "`ossutil ls` on the same place says what it holds",
                )
            tokens.add(token)

    def _page(self, token: str) -> Any:
        return self.bucket.list_objects_v2(prefix=self.prefix, continuation_token=token)


def _check_leaf(leaf: str, into: Path, uri: str) -> None:
    """A key that cannot be a file's name here (a NUL in it, a name over NAME_MAX) is one
    error naming it, before anything is written."""
    why = "it holds a NUL byte" if "\0" in leaf else too_long(str(into / leaf))
    if leaf in (".", "..") and why is None:
        why = "it names a folder"
    if why is not None:
        raise UserError(
            f"OSS lists a log at {uri} that cannot be copied here: {excerpt(leaf)} ({why})",
            hint="trainstack names its logs <role>-<index>.log; this object is not one of them",
        )


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
    """`fn` (a call into oss2), its failures each one UserError: OSS refusing, an answer that
    is not OSS's XML (a proxy's HTML page, an entity bomb: expat's limits refuse it), an
    object cut short, the network or the disk failing."""
    from xml.etree.ElementTree import ParseError

    where = f" at {uri}" if uri else ""
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
            f"OSS refused reading the run's logs{where}: {status} {code}",
            hint="AccessDenied: the credentials are not the run's team's (its RAM role may "
            "read only <bucket>/<team>/); NoSuchBucket: check $TRAINSTACK_OSS_ENDPOINT",
        ) from None
    except ParseError as err:
        raise _not_oss(where, f"not XML: {err}") from None
    except (RuntimeError, ValueError, KeyError, AttributeError, TypeError) as err:
        raise _not_oss(where, f"not a listing: {type(err).__name__}") from None
    except OSError as err:  # requests' errors are OSErrors too
        raise UserError(f"reading the run's logs{where} failed: {describe(err)}") from None


def _not_oss(where: str, why: str) -> UserError:
    return UserError(
        f"the answer to reading the run's logs{where} is not OSS's ({why})",
        hint="a proxy or a captive portal may be answering instead of OSS; "
        f"check ${ENDPOINT_ENV} and the network's proxy settings",
    )
