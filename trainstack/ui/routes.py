"""The console's routes, all GET: each reads the request's arguments, asks a page builder
(runlist, runpage, comparepage, sweeppages) or a file reader (logs, charts), and renders or
sends what it got. A run named in a URL must be in the registry (a 404 page otherwise), and a
file route serves only that run's files the registry knows (its replicas' logs, its charts)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from flask import Flask, Response, render_template, request

from trainstack.errors import NotFoundError
from trainstack.registry.model import RunRecord
from trainstack.ui import logs, queries
from trainstack.ui.config import UiConfig
from trainstack.ui.sweeppages import SweepLine
from trainstack.ui.views import status_of


@dataclass(frozen=True)
class ExperimentsPage:
    title: str
    rows: tuple[tuple[str, str, str, str, str, str], ...]  # name, href, runs, running, failed, last


def _filename(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)[:200] or "log"


def _png(data: bytes | None) -> Response:
    if data is None:
        raise NotFoundError("nothing to draw yet")
    return Response(data, mimetype="image/png")


def register(app: Flask, config: UiConfig) -> None:
    _run_pages(app, config)
    _run_files(app, config)
    _across_runs(app, config)


def _record(config: UiConfig, run_id: str) -> RunRecord:
    with queries.reading(config.home) as conn:
        return queries.get(conn, run_id)


def _run_pages(app: Flask, config: UiConfig) -> None:
    """The runs page, a run's page, the experiments page."""
    home = config.home

    @app.get("/")
    def runs() -> str:
        from trainstack.ui.runlist import build

        with queries.reading(home) as conn:
            page = build(home, conn, request.args, request.args.getlist("col"))
        return render_template("runs.html.j2", page=page)

    @app.get("/runs/<run_id>")
    def run(run_id: str) -> str:
        from trainstack.ui.runpage import build

        with queries.reading(home) as conn:
            r = queries.get(conn, run_id)
            history = queries.restarts(conn, run_id)
        return render_template(
            "run.html.j2",
            page=build(home, config.project, r, history, request.args, config.store),
        )

    @app.get("/experiments")
    def experiments() -> str:
        from trainstack.ui.views import url, when

        with queries.reading(home) as conn:
            found = queries.experiments(conn)
        rows = tuple(
            (
                e.name,
                url("/", {"experiment": e.name}),
                str(e.runs),
                str(e.running),
                str(e.failed),
                when(e.last_created),
            )
            for e in found
        )
        return render_template("experiments.html.j2", page=ExperimentsPage("experiments", rows))


def _run_files(app: Flask, config: UiConfig) -> None:
    """A local run's files: its charts, usage charts and replica logs (whole, followed, zipped);
    only what the registry records of that run."""

    @app.get("/runs/<run_id>/charts/<int:number>.png")
    def chart(run_id: str, number: int) -> Response:
        from trainstack.ui.charts import chart_png

        return _png(chart_png(_local(_record(config, run_id)), number))

    @app.get("/runs/<run_id>/usage/<replica>.png")
    def usage(run_id: str, replica: str) -> Response:
        from trainstack.ui.charts import usage_png

        return _png(usage_png(_local(_record(config, run_id)), replica))

    @app.get("/runs/<run_id>/logs/<replica>.log")
    def log_file(run_id: str, replica: str) -> Response:
        r = _local(_record(config, run_id))
        chunks: Iterator[bytes] = logs.whole(r, replica)
        out = Response(chunks, content_type="text/plain; charset=utf-8")
        if request.args.get("download"):
            name = _filename(f"{r.id}-{replica}.log")
            out.headers["Content-Disposition"] = f'attachment; filename="{name}"'
        return out

    @app.get("/runs/<run_id>/logs/<replica>/since")
    def log_since(run_id: str, replica: str) -> Response:
        r = _local(_record(config, run_id))
        offset = request.args.get("offset", "0")
        start = int(offset) if offset.isdigit() and len(offset) < 19 else 0
        lines, end = logs.since(r, replica, start)
        status = status_of(r)
        # When the run has ended, its outcome: the page's status then says so, not "running".
        doc = {
            "lines": list(lines),
            "offset": end,
            "running": not status.finished,
            "status": str(status),
            "reason": (r.reason or "") if status.finished else "",
        }
        return Response(json.dumps(doc), mimetype="application/json")

    @app.get("/runs/<run_id>/logs.zip")
    def log_zip(run_id: str) -> Response:
        r = _local(_record(config, run_id))
        out = Response(logs.archive(r), mimetype="application/zip")
        out.headers["Content-Disposition"] = f'attachment; filename="{_filename(r.id)}-logs.zip"'
        return out


def _across_runs(app: Flask, config: UiConfig) -> None:
    """Pages over several runs: a comparison and its chart, the sweeps, a sweep and its
    history chart."""
    home = config.home

    @app.get("/compare")
    def compare() -> str:
        from trainstack.ui.comparepage import build

        with queries.reading(home) as conn:
            page = build(
                conn, config.project, request.args.getlist("run"), request.args.get("metric", "")
            )
        return render_template("compare.html.j2", page=page)

    @app.get("/compare/chart.png")
    def compare_chart() -> Response:
        from trainstack.ui.charts import overlay_png
        from trainstack.ui.comparepage import views

        with queries.reading(home) as conn:
            found, _ = views(conn, request.args.getlist("run"))
        if not found:
            raise NotFoundError("no local run to draw")
        return _png(overlay_png(found, request.args.get("metric", "")))

    @app.get("/sweeps")
    def sweeps() -> str:
        from trainstack.ui.sweeppages import listing

        return render_template("sweeps.html.j2", page=SweepsPage("sweeps", listing(home)))

    @app.get("/sweeps/<name>")
    def sweep(name: str) -> str:
        from trainstack.ui.sweeppages import page

        return render_template("sweep.html.j2", page=page(home, name))

    @app.get("/sweeps/<name>/history.png")
    def sweep_history(name: str) -> Response:
        from trainstack.ui.sweeppages import history_png

        return _png(history_png(home, name))


@dataclass(frozen=True)
class SweepsPage:
    title: str
    sweeps: tuple[SweepLine, ...]


def _local(r: RunRecord) -> RunRecord:
    if r.run_dir is None:
        raise NotFoundError(
            f"run {r.id} ran on a cluster: its files are not on this machine",
            hint="its page shows its pods' logs when the Pulumi CLI and credentials are at hand",
        )
    return r
