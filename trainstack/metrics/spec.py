"""The training metrics spec of the Octopus training-task service: `$METRICS/metrics.json`
describes up to 6 charts.

    {"id": "run id", "metas": [{"name": "loss", "x": "epoch", "ys": ["loss", "accuracy"],
      "series": [], "description": "…", "smooth": "false", "with_timestamp": "false"}]}

Field names are the spec's. A chart has one y-axis, or two (`ys` with two names: a dual-axis
chart) when it has no `series`; `series` (at most 4) share the single left axis. Two fields are
trainstack's additions: `units`, an axis name → unit shown in the axis label, and `goals`, a
column → "min" or "max", what "best" means for that series (without one, only names that read as
a cost or a score have a best: trainstack.metrics.values). Checking never raises:
every problem becomes a `Diagnostic` naming the file and field, and what is valid is still used.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from trainstack import boundedjson
from trainstack.errors import Diagnostic
from trainstack.excerpt import excerpt
from trainstack.regularfile import describe, read_within
from trainstack.suggest import did_you_mean

META_FILE = "metrics.json"
MAX_CHARTS = 6
MAX_SERIES = 4
MAX_AXES = 2
# The Octopus metrics spec: names are 1-16 Chinese or English letters, digits, '-' and '_'.
NAME = re.compile(r"[A-Za-z0-9_\-\u4e00-\u9fff]{1,16}")
NAME_RULE = "1-16 letters (Chinese or English), digits, '-' or '_'"
MAX_DESCRIPTION = 64
# Read no further: six charts' metas fit in a few KB, and a run's code could leave gigabytes.
MAX_META_BYTES = 1 << 20
_FIELDS = (
    "name",
    "x",
    "ys",
    "series",
    "description",
    "smooth",
    "with_timestamp",
    "units",
    "goals",
)
GOALS = ("min", "max")
_FLAGS = {"true": True, "false": False}


class Axis(enum.StrEnum):
    LEFT = "left"
    RIGHT = "right"


@dataclass(frozen=True)
class Chart:
    """One valid entry of `metas`; `columns` are the series file's value columns in order."""

    name: str
    x: str
    ys: tuple[str, ...]
    series: tuple[str, ...]
    description: str
    smooth: bool
    units: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    goals: Mapping[str, str] = field(
        default_factory=lambda: MappingProxyType({})
    )  # column → min|max

    @property
    def dual(self) -> bool:
        return len(self.ys) == 2

    @property
    def columns(self) -> tuple[str, ...]:
        return self.series if self.series else self.ys

    def axis_of(self, column: str) -> Axis:
        return Axis.RIGHT if self.dual and column == self.ys[1] else Axis.LEFT

    def label(self, axis_name: str) -> str:
        unit = self.units.get(axis_name)
        return f"{axis_name} ({unit})" if unit else axis_name

    @property
    def file_name(self) -> str:
        return f"{self.name}.csv"


@dataclass(frozen=True)
class MetricsSpec:
    directory: Path
    root: Path  # the run directory: no file is read through a link out of it
    run_id: str
    charts: tuple[Chart, ...]
    problems: tuple[Diagnostic, ...]

    @property
    def present(self) -> bool:
        return (self.directory / META_FILE).is_file()


def load(directory: Path, *, root: Path | None = None) -> MetricsSpec:
    """Read and check `directory/metrics.json`; never raises for what a run wrote. `root` is
    the run directory (by default the folder holding `directory`): a file reached through a link
    out of it is not read (trainstack.regularfile.open_within)."""
    root = directory.parent if root is None else root
    path = directory / META_FILE
    problems: list[Diagnostic] = []
    say = _Reporter(str(path), problems)

    def nothing(run_id: str = "") -> MetricsSpec:
        return MetricsSpec(directory, root, run_id, (), tuple(problems))

    try:
        raw = read_within(root, path, MAX_META_BYTES)
        if len(raw) > MAX_META_BYTES:
            say("", f"over {MAX_META_BYTES:,} bytes: not a metrics spec (6 charts fit in a few KB)")
            return nothing()
        text = raw.decode("utf-8")
    except FileNotFoundError:
        csvs = sorted(p.name for p in directory.glob("*.csv")) if directory.is_dir() else []
        if csvs:
            say(
                "",
                f"missing, so {len(csvs)} series file(s) ({', '.join(map(_field, csvs[:4]))}"
                f"{', …' if len(csvs) > 4 else ''}) describe no chart",
                hint="write metrics.json with one entry in `metas` per chart (docs/metrics.md)",
            )
        return nothing()
    except OSError as err:
        say("", f"cannot be read: {describe(err)}")
        return nothing()
    except UnicodeDecodeError as err:
        say("", f"cannot be read: not UTF-8 (byte {err.start})")
        return nothing()
    try:
        doc = boundedjson.loads(text)
    except boundedjson.BoundedJsonError as err:
        problems.append(Diagnostic(str(path), err.lineno, err.colno, "", str(err), code="metrics"))
        return nothing()
    if not isinstance(doc, dict):
        say("", f"expected a JSON object with `id` and `metas`, found {_kind(doc)}")
        return nothing()
    for key in doc:
        if key not in ("id", "metas"):
            say(_field(key), "unknown field." + did_you_mean(str(key)[:64], ("id", "metas")))
    run_id = doc.get("id", "")
    if not isinstance(run_id, str):
        say("id", f"expected a string, found {_kind(run_id)}")
        run_id = ""
    metas = doc.get("metas")
    if not isinstance(metas, list):
        say("metas", "missing" if metas is None else f"expected a list, found {_kind(metas)}")
        return nothing(run_id)
    if len(metas) > MAX_CHARTS:
        say(
            "metas",
            f"{len(metas)} charts; at most {MAX_CHARTS} are allowed",
            hint=f"charts after the first {MAX_CHARTS} are not drawn",
        )
    charts: list[Chart] = []
    seen: set[str] = set()
    for i, meta in enumerate(metas[:MAX_CHARTS]):
        chart = _chart(meta, f"metas[{i}]", say)
        if chart is None:
            continue
        if chart.name in seen:
            say(f"metas[{i}].name", f"{chart.name!r} names an earlier chart too; names are unique")
            continue
        seen.add(chart.name)
        charts.append(chart)
    return MetricsSpec(directory, root, run_id, tuple(charts), tuple(problems))


class _Reporter:
    def __init__(self, file: str, out: list[Diagnostic]) -> None:
        self._file = file
        self._out = out

    def __call__(self, path: str, message: str, hint: str | None = None) -> None:
        self._out.append(Diagnostic(self._file, None, None, path, message, hint, code="metrics"))


def _chart(meta: object, at: str, say: _Reporter) -> Chart | None:
    if not isinstance(meta, dict):
        say(at, f"expected an object, found {_kind(meta)}")
        return None
    ok = True
    for key in meta:
        if key not in _FIELDS:
            say(f"{at}.{_field(key)}", "unknown field." + did_you_mean(str(key)[:64], _FIELDS))
    name = _name(meta.get("name"), f"{at}.name", say, required=True)
    x = _name(meta.get("x"), f"{at}.x", say, required=True)
    ys = _names(meta.get("ys"), f"{at}.ys", say, required=True, most=MAX_AXES)
    series = _names(meta.get("series", []), f"{at}.series", say, required=False, most=MAX_SERIES)
    if ys is not None and series and len(ys) > 1:
        say(
            f"{at}.ys",
            f"{len(ys)} axes with `series`: a chart with series has one y-axis",
            hint="drop the second name from ys, or the series",
        )
        ok = False
    if series is not None and len(set(series)) != len(series):
        say(f"{at}.series", "names repeat; each series needs its own name")
        ok = False
    if ys is not None and len(set(ys)) != len(ys):
        say(f"{at}.ys", "names repeat; the two axes need different names")
        ok = False
    description = meta.get("description", "")
    if (
        not isinstance(description, str)
        or len(description) > MAX_DESCRIPTION
        or any(not ch.isprintable() for ch in description)
    ):
        say(f"{at}.description", f"expected text of at most {MAX_DESCRIPTION} printable characters")
        description = ""
    smooth = _flag(meta.get("smooth", "false"), f"{at}.smooth", say)
    stamp = _flag(meta.get("with_timestamp", "false"), f"{at}.with_timestamp", say)
    if stamp:
        say(
            f"{at}.with_timestamp",
            'only "false" is supported (the Octopus metrics spec reserves it)',
            hint="the chart is drawn without timestamps",
        )
    units = _units(meta.get("units", {}), f"{at}.units", say, axes=(x or "", *(ys or ())))
    goals = _goals(meta.get("goals", {}), f"{at}.goals", say, columns=series or ys or ())
    if name is None or x is None or ys is None or series is None or not ok:
        return None
    if x in (series or ys):
        say(f"{at}.x", f"{x!r} is also a column name; the x column needs its own name")
        return None
    return Chart(
        name,
        x,
        ys,
        series,
        description,
        bool(smooth),
        MappingProxyType(units),
        MappingProxyType(goals),
    )


def _name(value: object, at: str, say: _Reporter, *, required: bool) -> str | None:
    if value is None:
        if required:
            say(at, "missing")
        return None
    if not isinstance(value, str) or not NAME.fullmatch(value):
        say(at, f"{_shown(value)}: expected {NAME_RULE}")
        return None
    return value


def _names(
    value: object, at: str, say: _Reporter, *, required: bool, most: int
) -> tuple[str, ...] | None:
    if value is None:
        say(at, "missing")
        return None
    if not isinstance(value, list):
        say(at, f"expected a list of names, found {_kind(value)}")
        return None
    if required and not value:
        say(at, "empty; expected at least one name")
        return None
    if len(value) > most:
        say(at, f"{len(value)} names; at most {most} are allowed")
        return None
    names = [_name(v, f"{at}[{i}]", say, required=True) for i, v in enumerate(value)]
    return None if any(n is None for n in names) else tuple(str(n) for n in names)


def _flag(value: object, at: str, say: _Reporter) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in _FLAGS:
        return _FLAGS[value.lower()]
    say(at, f'{_shown(value)}: expected "true" or "false"')
    return None


def _units(value: object, at: str, say: _Reporter, axes: tuple[str, ...]) -> dict[str, str]:
    if not isinstance(value, dict):
        say(at, f"expected an object (axis name → unit), found {_kind(value)}")
        return {}
    out: dict[str, str] = {}
    for key, unit in value.items():
        if key not in axes:
            say(
                f"{at}.{_field(key)}",
                "not an axis of this chart." + did_you_mean(str(key)[:64], axes),
            )
        elif not isinstance(unit, str) or not 1 <= len(unit) <= 16 or not unit.isprintable():
            say(f"{at}.{key}", f"{_shown(unit)}: expected a unit of 1-16 printable characters")
        else:
            out[str(key)] = unit
    return out


def _goals(value: object, at: str, say: _Reporter, columns: tuple[str, ...]) -> dict[str, str]:
    if not isinstance(value, dict):
        say(at, f"expected an object (column → min or max), found {_kind(value)}")
        return {}
    out: dict[str, str] = {}
    for key, goal in value.items():
        if key not in columns:
            say(
                f"{at}.{_field(key)}",
                "not a column of this chart." + did_you_mean(str(key)[:64], columns),
            )
        elif goal not in GOALS:
            say(f"{at}.{key}", f'{_shown(goal)}: expected "min" or "max"')
        else:
            out[str(key)] = str(goal)
    return out


def _field(key: object) -> str:
    """A key of the file as a field path shows it: itself when it is a short printable name,
    else a short quoted excerpt (a key can be a megabyte long, or hold control characters)."""
    text = str(key)
    return text if len(text) <= 40 and text.isprintable() else excerpt(text)


def _shown(value: object) -> str:
    """A value of the file as a message quotes it: a short excerpt of a string or a number,
    the kind of anything else (a list's repr can be as long and as deep as the file)."""
    if isinstance(value, str):
        return excerpt(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return excerpt(repr(value))
    return _kind(value)


def _kind(value: Any) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
    }.get(type(value), "a number")
