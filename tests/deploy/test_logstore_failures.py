"""Logs read back from OSS when the store, or what answers for it, misbehaves: each failure one
clear error, never a traceback or a listing without end. The stand-in records every call and
parses each answer with oss2's own parser (the cloud cannot exist here)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import requests
from oss2 import xml_utils

from trainstack.deploy import logstore
from trainstack.errors import UserError

URI = "oss://bucket/vision/_logs/r1/"
PREFIX = "vision/_logs/r1/"


def _listing(keys: list[str], token: str | None = None) -> bytes:
    contents = "".join(
        f"<Contents><Key>{k}</Key><LastModified>2024-01-01T00:00:00.000Z</LastModified>"
        f'<ETag>"e"</ETag><Type>Normal</Type><Size>1</Size><StorageClass>Standard'
        f"</StorageClass></Contents>"
        for k in keys
    )
    more = f"<NextContinuationToken>{token}</NextContinuationToken>" if token else ""
    truncated = "true" if token else "false"
    return (
        f"<?xml version='1.0' encoding='UTF-8'?><ListBucketResult><IsTruncated>{truncated}"
        f"</IsTruncated>{more}{contents}</ListBucketResult>"
    ).encode()


class RecordingBucket:
    """oss2.Bucket's two calls: each listing answer a scripted body parsed by oss2's parser,
    each download a scripted body or failure; every call recorded."""

    def __init__(self, pages: list[bytes], objects: dict[str, Any] | None = None) -> None:
        self.pages = pages
        self.objects = objects or {}
        self.calls: list[tuple[str, str]] = []

    def list_objects_v2(self, prefix: str = "", continuation_token: str = "") -> Any:
        self.calls.append(("list", continuation_token))
        body = self.pages[min(len(self.calls) - 1, len(self.pages) - 1)]
        result = SimpleNamespace(object_list=[], prefix_list=[], next_continuation_token="")
        return xml_utils.parse_list_objects_v2(result, body)

    def get_object_to_file(self, key: str, filename: str) -> None:
        self.calls.append(("get", key))
        got = self.objects.get(key, b"a line\n")
        if isinstance(got, Exception):
            raise got
        Path(filename).write_bytes(got)


def _read(tmp_path: Path, bucket: RecordingBucket) -> logstore.StoredLogs:
    return logstore.locate(URI, mount=None, into=tmp_path / "copy", bucket=bucket)


BOMB = (  # ten levels of ten: 10**10 characters from a few hundred bytes
    b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">'
    + b"".join(b'<!ENTITY %c "%s">' % (98 + i, b"&%c;" % (97 + i) * 10) for i in range(9))
    + b"]><ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>&j;</Key>"
    b"</Contents></ListBucketResult>"
)


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (b"<html><body><h1>Proxy login</h1><p>sign in</body></html>", "is not OSS's (not XML"),
        (b"<html><body><h1>Proxy login</h1></body></html>", "is not OSS's (not a listing"),
        (BOMB, "amplification"),
    ],
    ids=["html", "xhtml", "entity-bomb"],
)
def test_an_answer_that_is_not_a_listing_is_one_error(
    tmp_path: Path, answer: bytes, said: str
) -> None:
    with pytest.raises(UserError) as err:
        _read(tmp_path, RecordingBucket([answer]))
    assert said in err.value.message and "proxy" in (err.value.hint or "")


def test_an_object_cut_short_is_one_error(tmp_path: Path) -> None:
    cut = requests.exceptions.ChunkedEncodingError("Connection broken: IncompleteRead")
    bucket = RecordingBucket([_listing([f"{PREFIX}worker-0.log"])], {f"{PREFIX}worker-0.log": cut})
    with pytest.raises(UserError) as err:
        _read(tmp_path, bucket)
    assert "reading the run's logs at oss://bucket" in err.value.message


@pytest.mark.parametrize(
    ("leaf", "said"),
    [("worker\x00-0.log", "holds a NUL byte"), ("w" * 300 + "-0.log", "over 255 bytes")],
    ids=["nul", "long"],
)
def test_a_key_that_cannot_be_a_file_name_is_one_error(
    tmp_path: Path, leaf: str, said: str
) -> None:
    # A NUL cannot travel in XML 1.0: the stand-in hands oss2's parsed listing the key as OSS
    # would deliver it URL-decoded.
    bucket = RecordingBucket([_listing(["placeholder"])])
    original = bucket.list_objects_v2

    def listed(prefix: str = "", continuation_token: str = "") -> Any:
        page = original(prefix, continuation_token)
        page.object_list[0].key = PREFIX + leaf
        return page

    bucket.list_objects_v2 = listed  # type: ignore[method-assign]
    with pytest.raises(UserError) as err:
        _read(tmp_path, bucket)
    assert "cannot be copied here" in err.value.message and said in err.value.message
    assert not [c for c in bucket.calls if c[0] == "get"]


def test_a_repeated_continuation_token_ends_the_listing(tmp_path: Path) -> None:
    empty_forever = RecordingBucket([_listing([], token="t1")])
    with pytest.raises(UserError) as err:
        _read(tmp_path, empty_forever)
    assert "does not end" in err.value.message and "again" in err.value.message
    assert empty_forever.calls == [("list", ""), ("list", "t1")]
    one_key_again = RecordingBucket(
        [_listing([f"{PREFIX}worker-0.log"], token="a"), _listing([f"{PREFIX}worker-0.log"], "a")]
    )
    with pytest.raises(UserError):
        _read(tmp_path / "2", one_key_again)
    assert len(one_key_again.calls) <= 4


def test_a_listing_past_the_limit_says_it_was_cut(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(logstore, "MAX_OBJECTS", 3)
    keys = [f"{PREFIX}worker-{i}.log" for i in range(5)]
    stored = _read(tmp_path, RecordingBucket([_listing(keys)]))
    assert stored.cut
    assert sorted(p.name for p in stored.folder.iterdir()) == [
        "worker-0.log",
        "worker-1.log",
        "worker-2.log",
    ]
