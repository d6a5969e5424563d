"""Manifests as YAML: one multi-document stream, or one file per resource. Byte-stable."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from trainstack.render.options import RenderError
from trainstack.render.yaml11 import needs_quotes

_Base: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's when built with it


class _Dumper(_Base):  # type: ignore[misc]
    """Block style; multi-line strings (scripts, JSON files) as literal blocks to stay readable."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    if needs_quotes(value):  # what kubectl's YAML 1.1 reader would take for a bool or number
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="'")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)

INDEX = ".trainstack-manifests"  # what `render -o DIR` wrote there: only these it may replace


def to_yaml(doc: dict[str, Any]) -> str:
    text: str = yaml.dump(
        doc,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=4096,
    )
    return text


def dump_yaml(docs: Sequence[dict[str, Any]]) -> str:
    """A multi-document stream for `kubectl apply -f -`."""
    return "".join("---\n" + to_yaml(d) for d in docs)


def file_name(index: int, doc: dict[str, Any]) -> str:
    name = doc["metadata"]["name"]
    return f"{index:02d}-{str(doc['kind']).lower()}-{name}.yaml"


def write_directory(docs: Sequence[dict[str, Any]], directory: Path) -> list[Path]:
    """One file per resource, numbered in apply order.

    Only trainstack's own files are replaced or removed: the directory's index
    (`.trainstack-manifests`, no .yaml/.json suffix so `kubectl apply -f DIR` skips it) records
    each file written and its sha256. A file in the way that the index does not list, or one
    changed since it was written, is a `RenderError` before anything is touched."""
    try:
        return _write_directory(docs, directory)
    except OSError as err:
        where = err.filename or directory
        raise RenderError(
            f"cannot write the manifests to {directory}: {where}: {err.strerror or err}",
            hint="choose an output directory (-o) you can write to",
        ) from None


def _write_directory(docs: Sequence[dict[str, Any]], directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    index_path = directory / INDEX
    owned = _read_index(index_path)
    wanted = {file_name(i, d): to_yaml(d) for i, d in enumerate(docs)}
    for name in sorted(set(wanted) | set(owned)):
        _check_ours(directory / name, owned.get(name))
    for name in sorted(set(owned) - set(wanted)):
        (directory / name).unlink(missing_ok=True)
    paths = []
    for name, text in wanted.items():
        path = directory / name
        data = text.encode("utf-8")
        if owned.get(name) != _digest(data) or not path.exists():
            _write_atomically(path, data)
        paths.append(path)
    _write_atomically(
        index_path,
        (
            json.dumps(
                {
                    "writtenBy": "trainstack render",
                    "files": {n: _digest(t.encode("utf-8")) for n, t in wanted.items()},
                },
                indent=2,
                sort_keys=True,
            )
            + "\n"
        ).encode("utf-8"),
    )
    return paths


def _read_index(path: Path) -> dict[str, str]:
    if not os.path.lexists(path):
        return {}
    try:
        if path.is_symlink() or not path.is_file():
            raise ValueError("not a regular file")
        raw = json.loads(path.read_text(encoding="utf-8"))
        files = raw["files"]
        if not isinstance(files, dict) or not all(
            isinstance(k, str)
            and isinstance(v, str)
            and "/" not in k
            and k == Path(k).name
            and k not in ("", ".", "..")
            for k, v in files.items()
        ):
            raise ValueError("bad files")
    except (OSError, ValueError, KeyError, TypeError):
        raise RenderError(
            f"{path} is not an index trainstack wrote; refusing to change {path.parent}",
            hint="render into an empty or new directory",
        ) from None
    return dict(files)


def _check_ours(path: Path, digest: str | None) -> None:
    if not os.path.lexists(path):
        return
    if digest is None:
        raise RenderError(
            f"{path} already exists and was not written by trainstack render; "
            "refusing to overwrite it",
            hint="move it away, or render into an empty or new directory",
        )
    if path.is_symlink() or not path.is_file():
        raise RenderError(
            f"{path} is no longer the file trainstack render wrote (it is now a "
            "link or not a regular file); refusing to replace it",
            hint="move it away, or render into an empty or new directory",
        )
    if _digest(path.read_bytes()) != digest:
        raise RenderError(
            f"{path} was changed since trainstack render wrote it; refusing to "
            "replace or remove it",
            hint="move it away to keep your edits, then render again",
        )


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write_atomically(path: Path, data: bytes) -> None:
    # os.replace swaps the directory entry, so a link put in our file's place is never followed.
    fd, partial = tempfile.mkstemp(dir=path.parent, prefix=".trainstack-", suffix=".partial")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(partial, 0o644)
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
