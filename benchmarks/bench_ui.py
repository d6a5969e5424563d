"""`trainstack ui` with a large registry: the runs page and a run page with big charts, timed in
the server (Flask's test client: routing, the registry query, the page builders, the templates;
no network), against the work no console can avoid.

    .venv/bin/python benchmarks/bench_ui.py [--runs 10000] [--points 100000] [--repeat 5]

1. The runs page (50 runs of --runs, the newest first, and a filtered, sorted page), each row's
   idle warning read from its run's usage samples. Baseline: a plain `SELECT` of the same page
   (same columns, WHERE, ORDER BY, LIMIT) on a fresh read-only connection. The registry is filled
   through its own API (Registry.create, mark_running, finish): real SQLite, real run folders.
   Best of --repeat after a first, cold load (also printed). Target: at most 200 ms.
2. A run page with 6 charts x 4 series x --points points: the page and its 6 chart images,
   cold (nothing read or drawn before). Baseline: reading the 6 series CSVs with `np.loadtxt`,
   the least any chart of them costs. Target: at most 1.5 s.
3. The runs page with a metric column (`?metric=train/loss`) over 50 runs of --points points
   each, cold: every run's series read (no kept summaries, as before trainstack.metrics.summary),
   then each run's summary as a run's end leaves it. Baseline: the plain SELECT of the page.
   Target: at most 300 ms.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from trainstack.metrics import summary
from trainstack.registry import NewRun, Registry, RunStatus
from trainstack.registry.home import registry_path
from trainstack.registry.rows import COLUMNS
from trainstack.ui import charts
from trainstack.ui.app import UiConfig, create_app

sys.path.insert(0, str(Path(__file__).parent))
from bench_metrics import CHARTS, SERIES, make_run

HOST = {"Host": "127.0.0.1"}
STATUSES = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)


def fill(home: Path, runs: int) -> None:
    rnd = np.random.default_rng(1)
    with Registry.open(home) as reg:
        for i in range(runs):
            team = ("vision", "nlp", "speech")[i % 3]
            rec = reg.create(
                NewRun(
                    name=f"run-{i % 200}",
                    component=f"comp-{i % 7}",
                    component_version="1.0.0",
                    job_type=("pytorch", "tensorflow", "xgboost")[i % 3],
                    experiment=f"exp-{i % 40}",
                    tags={"team": team, "env": "ack-dev" if i % 2 else "local"},
                    parameters={"lr": float(rnd.uniform(0.001, 0.1)), "epochs": int(i % 10)},
                )
            )
            reg.mark_running(rec.id, [])
            reg.finish(rec.id, STATUSES[i % 3], reason=None if i % 3 == 0 else "exit code 1")
            assert rec.run_dir is not None
            rec.run_dir.mkdir(parents=True)
            samples = [
                {"t": float(t), "replica": "worker-0", "cpu_percent": 50.0, "rss_bytes": 1 << 28}
                for t in range(5)
            ]
            (rec.run_dir / "usage.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))


def metric_runs(home: Path, runs: int, points: int) -> list[Path]:
    """`runs` finished runs, each with one chart `train` (step, loss) of `points` points."""
    rnd = np.random.default_rng(2)
    roots = []
    meta = {"name": "train", "x": "step", "ys": ["loss"], "series": [], "description": "train",
            "smooth": "false", "with_timestamp": "false"}  # fmt: skip
    with Registry.open(home) as reg:
        for i in range(runs):
            rec = reg.create(NewRun(name=f"m-{i}", component="bench", component_version="1"))
            reg.mark_running(rec.id, [])
            reg.finish(rec.id, RunStatus.SUCCEEDED)
            assert rec.run_dir is not None
            metrics = rec.run_dir / "metrics"
            metrics.mkdir(parents=True)
            (metrics / "metrics.json").write_text(json.dumps({"id": rec.id, "metas": [meta]}))
            loss = np.abs(np.cumsum(rnd.normal(size=points))) + 1.0
            np.savetxt(
                metrics / "train.csv",
                np.column_stack([np.arange(1, points + 1), loss]),
                fmt="%.6g",
                delimiter=",",
                header="step,loss",
                comments="",
            )
            roots.append(rec.run_dir)
    return roots


def best_of(repeat: int, fn: object) -> tuple[float, float]:
    """(first, best) seconds of `repeat` calls."""
    assert callable(fn)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return times[0], min(times)


def plain_select(home: Path, where: str, args: list[object], order: str) -> None:
    conn = sqlite3.connect(f"{registry_path(home).absolute().as_uri()}?mode=ro", uri=True)
    try:
        conn.execute(
            f"SELECT {COLUMNS} FROM runs{where} ORDER BY {order} LIMIT 50", args
        ).fetchall()
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        started = time.perf_counter()
        fill(home, args.runs)
        print(f"registry: {args.runs:,} runs filled in {time.perf_counter() - started:.1f}s")
        client = create_app(UiConfig(home=home)).test_client()

        def runs_page(query: str) -> None:
            got = client.get("/" + query, headers=HOST)
            assert got.status_code == 200 and b'class="run"' in got.data, got.status_code

        pages = (
            ("newest first", "", "", [], "created_at DESC, id"),
            (
                "filtered and sorted",
                "?status=failed&team=nlp&q=run-1&sort=name&order=asc",
                " WHERE status = ? AND (instr(lower(name), lower(?)) > 0 OR instr(id, ?) > 0)"
                " AND EXISTS (SELECT 1 FROM json_each(runs.tags) AS t"
                " WHERE t.key = ? AND t.value = ?)",
                ["failed", "run-1", "run-1", "team", "nlp"],
                "name ASC, created_at DESC, id",
            ),
        )
        for label, query, where, sql_args, order in pages:
            charts.forget()
            cold, ours = best_of(args.repeat, lambda q=query: runs_page(q))
            _, base = best_of(
                args.repeat, lambda w=where, a=sql_args, o=order: plain_select(home, w, a, o)
            )
            print(f"runs page, {label} (50 of {args.runs:,} runs):")
            print(f"  plain SELECT of the same page: {base * 1000:8.2f} ms")
            print(f"  trainstack ui runs page:       {ours * 1000:8.2f} ms")
            print(f"  (its first, cold load:         {cold * 1000:8.2f} ms)")
            print(f"  ratio: {ours / base:.0f}x the plain SELECT; target <= 200 ms")

        run_id = make_run(home, args.points)
        metrics = home / "runs" / run_id / "metrics"

        def run_page() -> None:
            charts.forget()
            got = client.get(f"/runs/{run_id}", headers=HOST)
            assert got.status_code == 200, got.status_code
            for i in range(CHARTS):
                png = client.get(f"/runs/{run_id}/charts/{i}.png", headers=HOST)
                assert png.status_code == 200 and png.data.startswith(b"\x89PNG")

        def loadtxt() -> None:
            for i in range(CHARTS):
                np.loadtxt(metrics / f"chart{i}.csv", delimiter=",", skiprows=1, ndmin=2)

        _, ours = best_of(max(2, args.repeat // 2), run_page)
        _, base = best_of(max(2, args.repeat // 2), loadtxt)
        print(f"run page, {CHARTS} charts x {SERIES} series x {args.points:,} points (cold):")
        print(f"  np.loadtxt of the 6 CSVs:      {base:8.2f} s")
        print(f"  page + its 6 chart PNGs:       {ours:8.2f} s")
        print(f"  ratio: {ours / base:.2f}x loadtxt; target <= 1.5 s")

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        roots = metric_runs(home, 50, args.points)
        client = create_app(UiConfig(home=home)).test_client()

        def metric_page() -> None:
            charts.forget()  # cold: nothing the console read before is kept
            got = client.get("/?metric=train/loss", headers=HOST)
            assert got.status_code == 200 and b"(best " in got.data, got.status_code

        _, without = best_of(max(2, args.repeat // 2), metric_page)
        for root in roots:  # what each run's end leaves
            summary.write(root)
        _, kept = best_of(args.repeat, metric_page)
        _, base = best_of(args.repeat, lambda: plain_select(home, "", [], "created_at DESC, id"))
        print(f"runs page with a metric column, 50 runs x {args.points:,} points (cold):")
        print(f"  plain SELECT of the same page: {base * 1000:8.2f} ms")
        print(f"  every run's series read:       {without * 1000:8.2f} ms")
        print(f"  each run's kept summary:       {kept * 1000:8.2f} ms")
        print(f"  ratio: {kept / base:.0f}x the plain SELECT ({without / kept:.0f}x faster than "
              "reading the series); target <= 300 ms")  # fmt: skip


if __name__ == "__main__":
    main()
