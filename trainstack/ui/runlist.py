"""The runs page: the registry's runs, filtered as ModelArts' training-job list filters them
(name or ID, job type, status, created since, component, environment, team, tag, only mine),
sorted and paged in SQL (trainstack.ui.queries); the page's rows get their idle warning and,
when one is chosen, a metric's last and best value, from their run directories. Sorted by that
metric (best first, as `runs list --metric`) or filtered to the runs that have it, the runs
under the other filters are ranked from their metric summaries (trainstack.metrics.listing)
and paged here."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from trainstack.errors import UserError
from trainstack.humanize import human_seconds
from trainstack.metrics.values import MetricValue, find, number
from trainstack.registry.model import RunKind, RunRecord, RunStatus
from trainstack.registry.owner import current_user
from trainstack.ui import queries
from trainstack.ui.queries import RunQuery, Sort
from trainstack.ui.views import Link, Option, options, run_href, status_of, url, when

FIELDS = ("q", "status", "job_type", "kind", "since", "component", "experiment", "env", "team")
FIELDS_MORE = ("tag", "mine", "metric", "has", "sort", "order")
# The columns a reader may hide (the run, its status and a chosen metric always show): all of
# them make the table some 1,400 px wide. The choice is the URL's (`cols=1&col=...`), so it
# needs no script and no stored state, and the sort and page links carry it.
COLUMNS = (
    ("component", "component"),
    ("created", "created"),
    ("duration", "duration"),
    ("restarts", "restarts"),
    ("kind", "where"),
    ("job_type", "job type"),
    ("experiment", "experiment"),
    ("tags", "tags"),
    ("by", "by"),
    ("warning", "warning"),
)


@dataclass(frozen=True)
class RunRow:
    id: str
    href: str
    name: str
    status: str
    kind: str
    job_type: str
    component: str
    experiment: str
    experiment_href: str
    tags: tuple[str, ...]
    created: str
    duration: str
    restarts: str
    warning: str
    metric: str
    created_by: str


@dataclass(frozen=True)
class RunsPage:
    title: str
    args: tuple[tuple[str, str], ...]  # the filters, as hidden fields of the page's forms
    text: str
    since: str
    env: str
    team: str
    tag: str
    metric: str
    metric_header: Link | None  # the metric column's sort link, when a metric is chosen
    has: bool  # only the runs that have the metric
    mine: bool
    user: str
    statuses: tuple[Option, ...]
    job_types: tuple[Option, ...]
    kinds: tuple[Option, ...]
    components: tuple[Option, ...]
    experiments: tuple[Option, ...]
    headers: tuple[Link, ...]  # each shown sortable column's sort link
    columns: tuple[Option, ...]  # the column chooser: each optional column, ticked if shown
    shown: frozenset[str]  # the optional columns shown
    rows: tuple[RunRow, ...]
    summary: str
    pages: tuple[Link, ...]
    problems: tuple[str, ...]


def parse(args: Mapping[str, str]) -> tuple[RunQuery, list[str]]:
    """The query the page's form asks for; what cannot be read is left out and said."""
    problems: list[str] = []
    q = RunQuery(
        text=args.get("q", "").strip(),
        job_type=args.get("job_type", ""),
        component=args.get("component", ""),
        experiment=args.get("experiment", ""),
        env=args.get("env", "").strip(),
        team=args.get("team", "").strip(),
    )
    if status := args.get("status", ""):
        try:
            q = replace(q, status=RunStatus(status))
        except ValueError:
            problems.append(f"status {status!r} is not one of " + ", ".join(RunStatus))
    if kind := args.get("kind", ""):
        try:
            q = replace(q, kind=RunKind(kind))
        except ValueError:
            problems.append(f"kind {kind!r} is not local or cluster")
    if since := args.get("since", "").strip():
        from trainstack.humanize import parse_since

        try:
            q = replace(q, since=parse_since(since))
        except UserError as err:
            problems.append("created since: " + err.message.removeprefix("--since "))
    if tag := args.get("tag", "").strip():
        key, sep, value = tag.partition("=")
        if sep and key:
            q = replace(q, tag=(key, value))
        else:
            problems.append(f"tag {tag!r}: expected KEY=VALUE, such as team=vision")
    if args.get("mine"):
        q = replace(q, created_by=current_user())
    try:
        q = replace(q, sort=Sort(args.get("sort") or Sort.CREATED))
    except ValueError:
        problems.append(f"cannot sort by {args.get('sort')!r}")
    q = replace(q, descending=args.get("order", "desc") != "asc")
    page = args.get("page", "1")
    q = replace(q, page=int(page) if page.isdigit() and 0 < len(page) < 7 else 1)
    return q, problems


def chosen_columns(args: Mapping[str, str], chosen: list[str]) -> frozenset[str]:
    """The optional columns the URL asks for: all of them unless its chooser was sent
    (`cols=1`), then those ticked (`col=...`)."""
    known = {key for key, _ in COLUMNS}
    if not args.get("cols"):
        return frozenset(known)
    return frozenset(c for c in chosen if c in known)


def _warning(r: RunRecord) -> str:
    if r.run_dir is None:
        return ""
    from trainstack.ui.charts import idle_of

    idle = idle_of(r)
    if not idle:
        return ""
    more = f" (+{len(idle) - 1} more)" if len(idle) > 1 else ""
    return f"idle: {idle[0].render()}{more}"


def _value(r: RunRecord, metric: str) -> MetricValue | None:
    """The run's value of `metric`: from its kept summary (a few hundred bytes) when current;
    else from every point, read once per change of its files (the console writes nothing)."""
    if r.run_dir is None:
        return None
    from trainstack.metrics import summary
    from trainstack.ui.charts import run_view

    kept = summary.read(r.run_dir)
    return find(list(kept if kept is not None else run_view(r).values), metric)


def _metric(r: RunRecord, metric: str) -> str:
    if not metric or r.run_dir is None:
        return ""
    hit = _value(r, metric)
    if hit is None:
        return "-"
    return (
        f"{number(hit.last)} (best {number(hit.best)})"
        if hit.best is not None
        else number(hit.last)
    )


def _row(r: RunRecord, metric: str) -> RunRow:
    try:
        warning, value = _warning(r), _metric(r, metric)
    except (OSError, UserError) as err:
        warning, value = f"unreadable run files: {err}", "-"
    return RunRow(
        id=r.id,
        href=run_href(r.id),
        name=r.name,
        status=str(status_of(r)),
        kind=str(r.kind),
        job_type=r.job_type or "-",
        component=f"{r.component}@{r.component_version}",
        experiment=r.experiment or "",
        experiment_href=url("/", {"experiment": r.experiment or ""}),
        tags=tuple(f"{k}={v}" for k, v in sorted(r.tags.items())),
        created=when(r.created_at),
        duration=human_seconds(r.duration),
        restarts=str(r.restarts),
        warning=warning,
        metric=value,
        created_by=r.created_by or "-",
    )


def _by_metric(
    conn: sqlite3.Connection, q: RunQuery, metric: str, only_with: bool
) -> queries.RunPage:
    """The page of runs under the filters, sorted by `metric` (best first; `q.descending`
    False: worst first; the runs without it last) or in the query's own order, and with
    `only_with` only the runs that have it."""
    from trainstack.metrics.listing import has, rank_by

    every = queries.matching(conn, q)
    ranked = rank_by(every.runs, lambda r: _value(r, metric))
    if q.sort is Sort.METRIC:
        with_it = [r for r in ranked if has(r)]
        rest = [] if only_with else [r for r in ranked if not has(r)]
        ordered = [r.record for r in (*(with_it if q.descending else with_it[::-1]), *rest)]
    else:
        having = {r.record.id for r in ranked if has(r)}
        ordered = [r for r in every.runs if r.id in having]
    pages = max(1, -(-len(ordered) // q.per_page))
    q = replace(q, page=min(q.page, pages))
    first = (q.page - 1) * q.per_page
    return queries.RunPage(
        tuple(ordered[first : first + q.per_page]), len(ordered), q, every.damaged
    )


def build(
    home: Path, conn: sqlite3.Connection, args: Mapping[str, str], chosen: list[str] | None = None
) -> RunsPage:
    """The page `args` asks for; `chosen`: the URL's `col` values (the columns ticked)."""
    q, problems = parse(args)
    kept: dict[str, str | list[str]] = {k: args.get(k, "") for k in (*FIELDS, *FIELDS_MORE)}
    shown = chosen_columns(args, chosen or [])
    if args.get("cols"):
        kept.update(cols="1", col=[key for key, _ in COLUMNS if key in shown])
    text_of = {k: v for k, v in kept.items() if isinstance(v, str)}
    metric = text_of["metric"].strip()
    only_with = bool(text_of["has"]) and bool(metric)
    if q.sort is Sort.METRIC and not metric:
        problems.append("sorting by a metric needs one: name it in the metric field")
        q = replace(q, sort=Sort.CREATED)
    if q.sort is Sort.METRIC or only_with:
        got = _by_metric(conn, q, metric, only_with)
        q = got.query
    else:
        got = queries.page(conn, q)
        if q.page > got.pages:
            q = replace(q, page=got.pages)
            got = queries.page(conn, q)
    headers = []
    for sort, text in (
        (Sort.NAME, "run"),
        (Sort.STATUS, "status"),
        (Sort.COMPONENT, "component"),
        (Sort.CREATED, "created"),
        (Sort.DURATION, "duration"),
        (Sort.RESTARTS, "restarts"),
    ):
        if sort.value in {"component", "created", "duration", "restarts"} - shown:
            continue
        order = "asc" if q.sort is sort and q.descending else "desc"
        arrow = (" ↓" if q.descending else " ↑") if q.sort is sort else ""
        headers.append(
            Link(
                text + arrow, url("/", {**kept, "sort": sort.value, "order": order}), q.sort is sort
            )
        )
    metric_header = None
    if metric:
        order = "asc" if q.sort is Sort.METRIC and q.descending else "desc"
        arrow = (
            (" ↓ best first" if q.descending else " ↑ worst first") if q.sort is Sort.METRIC else ""
        )
        metric_header = Link(
            metric + arrow,
            url("/", {**kept, "sort": Sort.METRIC.value, "order": order}),
            q.sort is Sort.METRIC,
        )
    first = (q.page - 1) * q.per_page
    summary = (
        f"runs {first + 1}–{first + len(got.runs)} of {got.total}" if got.runs else "no runs match"
    )
    return RunsPage(
        title="trainstack runs" + (f": experiment {q.experiment}" if q.experiment else ""),
        args=tuple((k, v) for k, v in text_of.items() if v),
        text=text_of["q"],
        since=text_of["since"],
        env=text_of["env"],
        team=text_of["team"],
        tag=text_of["tag"],
        metric=metric,
        metric_header=metric_header,
        has=only_with,
        mine=bool(text_of["mine"]),
        user=current_user(),
        statuses=options(tuple(RunStatus), text_of["status"]),
        job_types=options(queries.choices(conn, "job_type"), text_of["job_type"]),
        kinds=options(tuple(RunKind), text_of["kind"]),
        components=options(queries.choices(conn, "component"), text_of["component"]),
        experiments=options(queries.choices(conn, "experiment"), text_of["experiment"]),
        headers=tuple(headers),
        columns=tuple(Option(key, text, key in shown) for key, text in COLUMNS),
        shown=shown,
        rows=tuple(_row(r, metric) for r in got.runs),
        summary=summary,
        pages=_pages(kept, q.page, got.pages),
        problems=(*problems, *got.damaged),
    )


def _pages(kept: Mapping[str, str | list[str]], current: int, last: int) -> tuple[Link, ...]:
    shown = sorted({1, last, *range(max(1, current - 3), min(last, current + 3) + 1)})
    links = []
    if current > 1:
        links.append(Link("‹ previous", url("/", {**kept, "page": str(current - 1)})))
    links.extend(Link(str(n), url("/", {**kept, "page": str(n)}), n == current) for n in shown)
    if current < last:
        links.append(Link("next ›", url("/", {**kept, "page": str(current + 1)})))
    return tuple(links)
