"""Read one YAML file into plain data plus the source position of every key and value.

Hostile input is rejected before it can cost much: a size cap checked before reading, UTF-8 and
control-character checks, and a single pass over libyaml's event stream that bounds nesting depth,
alias use and node count (alias bombs expand exponentially only when constructed — we never
construct from the node graph, we walk events once). Duplicate keys are errors.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from trainstack.errors import Diagnostic, SpecError
from trainstack.excerpt import excerpt

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 100_000

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

PathKey = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Mark:
    line: int
    column: int


@dataclass
class SourceDoc:
    """A parsed document: its data and where each part of it came from."""

    file: str
    data: Any
    values: dict[PathKey, Mark]
    keys: dict[PathKey, Mark]

    def mark(self, path: PathKey, *, key: bool = False) -> Mark | None:
        """Best position for a path: the exact node, else its nearest located ancestor."""
        table = self.keys if key else self.values
        probe = path
        while True:
            found = table.get(probe) or self.values.get(probe)
            if found is not None:
                return found
            if not probe:
                return Mark(1, 1)  # an empty document: the start of the file
            probe = probe[:-1]

    def diag(
        self,
        path: PathKey,
        message: str,
        *,
        hint: str | None = None,
        key: bool = False,
        code: str = "invalid",
    ) -> Diagnostic:
        m = self.mark(path, key=key)
        return Diagnostic(
            file=self.file,
            line=m.line if m else None,
            column=m.column if m else None,
            path=format_path(path),
            message=message,
            hint=hint,
            code=code,
        )


def format_path(path: PathKey) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


def _file_error(
    file: str,
    message: str,
    line: int | None = None,
    column: int | None = None,
    hint: str | None = None,
    code: str = "yaml",
) -> SpecError:
    return SpecError(
        [
            Diagnostic(
                file=file, line=line, column=column, path="", message=message, hint=hint, code=code
            )
        ]
    )


def read_text(path: Path, what: str = "specs") -> str:
    """Read a spec file as text, refusing what cannot be a spec before reading all of it."""
    file = str(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise _file_error(file, "file not found", code="not-found") from None
    except OSError as err:
        raise _file_error(file, f"cannot read: {err.strerror}", code="io") from None
    if not path.is_file():
        raise _file_error(file, "not a regular file", code="io")
    if size > MAX_BYTES:
        raise _file_error(
            file,
            f"file is {size:,} bytes; {what} are limited to {MAX_BYTES:,}",
            hint=f"{what} describe a job or a platform; keep data out of them",
            code="too-large",
        )
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as err:
        raise _file_error(file, f"cannot read: {err.strerror or err}", code="io") from None
    return decode(file, raw)


def _position(raw: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in bytes) of a byte offset."""
    line_start = raw.rfind(b"\n", 0, offset) + 1
    return raw.count(b"\n", 0, offset) + 1, offset - line_start + 1


def decode(file: str, raw: bytes) -> str:
    nul = raw.find(b"\x00")
    if nul >= 0:
        line, column = _position(raw, nul)
        raise _file_error(
            file, "binary file (contains NUL bytes), not YAML", line, column, code="binary"
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line, column = _position(raw, err.start)
        raise _file_error(
            file,
            f"not valid UTF-8 (byte {err.start})",
            line,
            column,
            hint="save the file as UTF-8",
            code="encoding",
        ) from None
    return text


def _line_of(text: str, line: int) -> str:
    lines = text.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else ""


_SPEC_MARK = re.compile(
    r"^[ \t]*(apiVersion[ \t]*:[ \t]*[\"']?trainstack\.dev/|"
    r"kind[ \t]*:[ \t]*[\"']?(Component|Run)\b)",
    re.MULTILINE,
)


def looks_like_spec(text: str) -> bool:
    """Whether the text says it is a trainstack spec (its apiVersion or kind line)."""
    return _SPEC_MARK.search(text) is not None


def parse(file: str, text: str, what: str = "specs") -> SourceDoc:
    """Parse YAML text into a SourceDoc; every failure is a SpecError located in the file."""
    try:
        # Streamed: events are built into data as they come and never held all at once.
        return _Builder(file, _bounded_events(file, text, what)).build()
    except yaml.MarkedYAMLError as err:
        m = err.problem_mark
        line = m.line + 1 if m else None
        col = m.column + 1 if m else None
        if "maximum nesting depth" in (err.problem or ""):
            # libyaml's own limit (its scanner looks ahead in flow context): same message as ours.
            raise _file_error(
                file, f"nested deeper than {MAX_DEPTH} levels", line, col, code="too-deep"
            ) from None
        # The line is quoted only from a file that is a spec: `spec.component` may point at any
        # file (a credentials file, by mistake or on purpose), and its lines are not ours to echo.
        shown = _line_of(text, line) if line and looks_like_spec(text) else ""
        shown = shown.strip()
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        hint = f"line {line}: {shown!r}" if shown else None
        problem = err.problem or "invalid YAML"
        # Where the construct that failed began (an unclosed `{` or `[`, a quoted string): the
        # problem's own line is only where the parser noticed.
        opened = err.context_mark
        if opened is not None and err.context and (opened.line + 1) != line:
            began = (
                f"{err.context} that began at line {opened.line + 1}, column {opened.column + 1}"
            )
            hint = f"{hint}; {began}" if hint else began
        raise _file_error(file, f"YAML syntax error: {problem}", line, col, hint) from None
    except yaml.YAMLError as err:
        raise _file_error(file, f"YAML error: {err}") from None


def _bounded_events(file: str, text: str, what: str = "specs") -> Iterator[yaml.Event]:
    depth = 0
    nodes = 0
    docs = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.AliasEvent):
            m = _at(event)
            raise _file_error(
                file,
                f"YAML aliases (*name) are not allowed in {what}",
                m.line,
                m.column,
                hint=f"write the value out; aliases make {what} hard to review",
                code="alias",
            )
        if isinstance(event, yaml.DocumentStartEvent):
            docs += 1
            if docs > 1:
                m = _at(event)
                raise _file_error(
                    file,
                    "more than one YAML document in a spec file",
                    m.line,
                    m.column,
                    hint="one spec per file",
                    code="multi-doc",
                )
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                m = _at(event)
                raise _file_error(
                    file,
                    f"nested deeper than {MAX_DEPTH} levels",
                    m.line,
                    m.column,
                    code="too-deep",
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        if isinstance(event, yaml.NodeEvent):
            nodes += 1
            if nodes > MAX_NODES:
                m = _at(event)
                raise _file_error(
                    file, f"more than {MAX_NODES:,} YAML nodes", m.line, m.column, code="too-large"
                )
        yield event


_BOOL = {"true": True, "false": False}
# YAML 1.2's core schema types (yaml.org/spec/1.2.2, 10.3): tags a spec may spell out.
_CORE_TAGS = frozenset(
    f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq")
)
# C0 controls but tab, line feed and carriage return; DEL; the C1 controls (ECMA-48).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# What a plain scalar that resolves to something other than text can start with.
_SPECIAL_START = frozenset("0123456789+-.~nNtTfF")


class _Builder:
    """Build plain Python data from a stream of events, recording marks per path."""

    def __init__(self, file: str, events: Iterator[yaml.Event]) -> None:
        self.file = file
        self.events = events
        self.ahead: yaml.Event | None = None
        self.values: dict[PathKey, Mark] = {}
        self.keys: dict[PathKey, Mark] = {}
        self.errors: list[Diagnostic] = []

    def _peek(self) -> yaml.Event:
        if self.ahead is None:
            self.ahead = next(self.events)
        return self.ahead

    def _next(self) -> yaml.Event:
        event = self._peek()
        self.ahead = None
        return event

    def build(self) -> SourceDoc:
        data: Any = None
        for event in self.events:
            if isinstance(event, yaml.DocumentStartEvent):
                data = self._node(())
                break
        for _ in self.events:
            pass  # the rest of the stream: a second document or a syntax error still counts
        if self.errors:
            raise SpecError(self.errors)
        return SourceDoc(self.file, data, self.values, self.keys)

    def _node(self, path: PathKey) -> Any:
        event = self._next()
        self.values[path] = _at(event)
        self._check_tag(event, path)
        if isinstance(event, yaml.ScalarEvent):
            self._check_text(event, path)
            return _scalar(event)
        if isinstance(event, yaml.SequenceStartEvent):
            items: list[Any] = []
            while not isinstance(self._peek(), yaml.SequenceEndEvent):
                items.append(self._node((*path, len(items))))
            self._next()
            return items
        if isinstance(event, yaml.MappingStartEvent):
            return self._mapping(path)
        raise AssertionError(f"unexpected YAML event {event!r}")

    def _mapping(self, path: PathKey) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        while not isinstance(self._peek(), yaml.MappingEndEvent):
            key_event = self._peek()
            km = _at(key_event)
            if not isinstance(key_event, yaml.ScalarEvent):
                self._refuse(km, path, "mapping keys must be plain scalars", code="bad-key")
                self._skip()
                self._skip()
                continue
            self._next()
            self._check_tag(key_event, path)
            self._check_text(key_event, path)
            key = _scalar(key_event)
            if not isinstance(key, str):
                key = str(key).lower() if isinstance(key, bool) else str(key)
            child = (*path, key)
            if key in out:
                first = self.keys.get(child)
                where = f" (first at line {first.line})" if first else ""
                said = f"duplicate key {key!r}{where}"
                self._refuse(km, child, said, code="duplicate-key", hint="remove one of them")
                self._skip()
                continue
            self.keys[child] = km
            out[key] = self._node(child)
        self._next()
        return out

    def _check_tag(self, event: yaml.Event, path: PathKey) -> None:
        """A tag other than YAML's own core types (`!custom`, `!!python/…`) is refused: a spec
        that says it means something trainstack does not know must not be read as plain text."""
        tag = getattr(event, "tag", None)
        if tag is None or tag in ("!", *_CORE_TAGS):
            return
        self._refuse(
            _at(event),
            path,
            f"YAML tag {excerpt(tag)} is not allowed in specs",
            code="yaml-tag",
            hint="remove the tag; specs use plain YAML values",
        )

    def _check_text(self, event: yaml.ScalarEvent, path: PathKey) -> None:
        """NUL and terminal control characters in a value, written with YAML's escapes (the
        file itself holds none: decode() refused them): a NUL cannot reach a path or an
        environment variable (execve(2) strings end at it), and ESC or a C1 control reaches the
        terminal of whoever reads the value back."""
        bad = _CONTROL.search(event.value)
        if bad is None:
            return
        self._refuse(
            _at(event),
            path,
            f"control character {excerpt(bad.group())} in a value: not allowed",
            code="control-char",
            hint="remove it; tabs and line breaks are the only control characters allowed",
        )

    def _refuse(
        self, mark: Mark, path: PathKey, message: str, *, code: str, hint: str | None = None
    ) -> None:
        """One diagnostic at `mark` for the value at `path`."""
        self.errors.append(
            Diagnostic(
                self.file, mark.line, mark.column, format_path(path), message, hint=hint, code=code
            )
        )

    def _skip(self) -> None:
        depth = 0
        while True:
            event = self._next()
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            if depth == 0:
                return


def _at(event: yaml.Event) -> Mark:
    m = event.start_mark
    return Mark(m.line + 1, m.column + 1) if m is not None else Mark(0, 0)


def _scalar(event: yaml.ScalarEvent) -> Any:
    """Resolve a scalar by YAML 1.2 core-schema rules (no `yes`/`on` booleans, no sexagesimal)."""
    value: str = event.value
    plain, quoted = event.implicit
    if quoted and not plain:
        return value
    if not plain:
        # An explicit tag such as !!int: honour the common ones, otherwise keep the text.
        tag = event.tag or ""
        if tag.endswith(":int"):
            return _as_int(value, value)
        if tag.endswith(":float"):
            return _as_float(value, value)
        return value
    if value and value[0] not in _SPECIAL_START:
        return value  # most scalars are words: not null, a boolean or a number (ASCII digits)
    low = value.lower()
    if value in ("", "~") or low == "null":
        return None
    if low in _BOOL:
        return _BOOL[low]
    number = _as_int(value, None)
    if number is not None:
        return number
    return _as_float(value, value)


def _as_int(text: str, default: Any) -> Any:
    bare = text.replace("_", "")
    t = bare if "_" in text and bare.lstrip("+-").isdigit() else text
    try:
        if t.lstrip("+-").isdigit():
            return int(t)
        if t.lower().startswith(("0x", "+0x", "-0x")):
            return int(t, 16)
        if t.lower().startswith(("0o", "+0o", "-0o")):
            return int(t, 8)
    except ValueError:
        return default
    return default


def _as_float(text: str, default: Any) -> Any:
    low = text.lower()
    if low in (".inf", "+.inf"):
        return float("inf")
    if low == "-.inf":
        return float("-inf")
    if low == ".nan":
        return float("nan")
    if not any(c.isdigit() for c in text) or not all(c in "0123456789+-.eE_" for c in text):
        return default
    try:
        return float(text.replace("_", ""))
    except ValueError:
        return default


def load(path: Path) -> SourceDoc:
    return parse(str(path), read_text(path))


def shown(path: Path) -> Path:
    """How a spec file is named in diagnostics, whichever way it was reached (given on the
    command line, as `../component.yaml`, or found by `name@version`): relative to the current
    directory when inside it, else absolute."""
    try:
        absolute = Path(os.path.abspath(path))
        return absolute.relative_to(Path.cwd())
    except (ValueError, OSError):  # outside the current directory, or it was removed
        return Path(os.path.abspath(path)) if os.path.isabs(path) else Path(path)
