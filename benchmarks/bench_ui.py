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
4-6. The sweeps page with 20 sweeps, a comparison with its chart, a 32-replica run's page with
   its images, each cold and warm. Baselines: the least reading each needs (a plain sqlite3 query
   of each storage, np.loadtxt of the series, json.loads of the usage samples). Targets: at most
   500 ms warm, 2 s cold.

`--only runs|metric|drawn` runs one part.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from flask.testing import FlaskClient

from trainstack.metrics import summary
from trainstack.registry import NewRun, Registry, ReplicaExit, RunStatus
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
    parser.add_argument(
        "--only",
        choices=("runs", "metric", "drawn"),
        help="one part: the runs and run pages (1, 2), the metric column (3), or the sweeps, "
        "compare and 32-replica pages (4-6)",
    )
    args = parser.parse_args()
    for part, bench in (("runs", runs_pages), ("metric", metric_column), ("drawn", drawn_pages)):
        if args.only in (None, part):
            bench(args)


def runs_pages(args: argparse.Namespace) -> None:
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


def metric_column(args: argparse.Namespace) -> None:
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


def drawn_pages(args: argparse.Namespace) -> None:
    """4-6: pages whose figures are drawn (or whose optuna storages are read), each cold (nothing
    read or drawn before: `charts.forget()`) and warm (loaded again, unchanged)."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        client = create_app(UiConfig(home=home)).test_client()
        for bench in (sweeps_pages, compare_page, wide_run_page):
            bench(home, client, args)


def get_all(client: FlaskClient, path: str) -> int:
    """GET a page and every image it shows, as a browser does; the number of images."""
    got = client.get(path, headers=HOST)
    assert got.status_code == 200, (path, got.status_code)
    srcs = re.findall(r'<img class="chart"[^>]* src="([^"]+)"', got.get_data(as_text=True))
    for src in srcs:
        png = client.get(html.unescape(src), headers=HOST)
        assert png.status_code == 200 and png.data.startswith(b"\x89PNG"), src
    return len(srcs)


def cold_and_warm(repeat: int, load: Callable[[], object]) -> tuple[float, float]:
    """(cold, warm) seconds, each the best of `repeat`: cold after forgetting all that is
    kept, warm right after a load."""

    def cold() -> None:
        charts.forget()
        load()

    _, first = best_of(max(2, repeat // 2), cold)
    load()
    _, second = best_of(repeat, load)
    return first, second


def report(label: str, base_label: str, base: float, cold: float, warm: float) -> None:
    print(f"{label}:")
    print(f"  {base_label + ':':<31}{base * 1000:8.1f} ms")
    print(f"  {'cold (nothing kept):':<31}{cold * 1000:8.1f} ms  ({cold / base:.1f}x)")
    print(f"  {'warm (loaded before):':<31}{warm * 1000:8.1f} ms  ({warm / base:.2f}x)")
    print("  targets: warm <= 500 ms, cold <= 2 s")


def fill_sweeps(home: Path, sweeps: int, trials: int) -> None:
    """`sweeps` optuna storages as a sweep makes them, each of `trials` completed trials."""
    import optuna

    from trainstack.sweep import study as studies

    studies.quiet()
    rnd = np.random.default_rng(3)
    space = {"lr": optuna.distributions.FloatDistribution(1e-4, 1e-1, log=True)}
    for i in range(sweeps):
        directory = studies.sweep_dir(home, f"sweep-{i:02d}")
        directory.mkdir(parents=True)
        os.close(os.open(directory / studies.STORAGE_FILE, os.O_CREAT | os.O_WRONLY, 0o600))
        study = optuna.create_study(
            storage=studies.storage_url(directory), study_name=directory.name
        )
        study.set_user_attr("objective", "train/loss")
        study.add_trials(
            [
                optuna.trial.create_trial(
                    params={"lr": float(rnd.uniform(1e-4, 1e-1))},
                    distributions=space,
                    value=float(rnd.uniform()),
                    user_attrs={studies.RUN_ID: f"run-{i}-{t}", studies.RUN_NAME: f"t{t}"},
                )
                for t in range(trials)
            ]
        )


def sweeps_pages(home: Path, client: FlaskClient, args: argparse.Namespace) -> None:
    """4. The sweeps page over 20 sweeps of 50 trials, then one sweep's page and history
    chart. Baseline: counting each storage's trials with a plain sqlite3 query."""
    from trainstack.sweep import study as studies

    fill_sweeps(home, 20, 50)
    storages = [p / studies.STORAGE_FILE for p in sorted(studies.sweeps_root(home).iterdir())]

    def count_trials() -> None:
        for path in storages:
            conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
            try:
                conn.execute("SELECT COUNT(*) FROM trials").fetchone()
            finally:
                conn.close()

    _, base = best_of(args.repeat, count_trials)
    cold, warm = cold_and_warm(args.repeat, lambda: get_all(client, "/sweeps"))
    report("sweeps page, 20 sweeps x 50 trials", "sqlite3 count of each's trials", base, cold, warm)
    cold, warm = cold_and_warm(args.repeat, lambda: get_all(client, "/sweeps/sweep-07"))
    report("a sweep's page and history chart", "sqlite3 count of each's trials", base, cold, warm)


def compare_page(home: Path, client: FlaskClient, args: argparse.Namespace) -> None:
    """5. Compare of 4 runs of --points points: the page and its chart. Baseline: np.loadtxt
    of the 4 series."""
    roots = metric_runs(home, 4, args.points)
    ids = [root.name for root in roots]

    def loadtxt() -> None:
        for root in roots:
            np.loadtxt(root / "metrics" / "train.csv", delimiter=",", skiprows=1, ndmin=2)

    _, base = best_of(max(2, args.repeat // 2), loadtxt)
    query = "&".join(f"run={i}" for i in ids) + "&metric=train/loss"
    cold, warm = cold_and_warm(args.repeat, lambda: get_all(client, f"/compare?{query}"))
    report(
        f"compare, 4 runs x {args.points:,} points, and its chart", "np.loadtxt", base, cold, warm
    )


def wide_run(home: Path, replicas: int, samples: int, points: int) -> str:
    """A failed run of `replicas` workers, each with `samples` usage samples (one GPU) and a
    20,000-line log, and 2 charts x 2 series x `points` points."""
    with Registry.open(home) as reg:
        rec = reg.create(NewRun(name="wide", component="bench", component_version="1"))
        reg.mark_running(rec.id, [ReplicaExit("worker", i, None) for i in range(replicas)])
        exits = [ReplicaExit("worker", i, 1 if i == 17 else 143, stopped=i != 17)
                 for i in range(replicas)]  # fmt: skip
        reg.finish(rec.id, RunStatus.FAILED, exits=exits, reason="worker-17 exited with code 1")
    assert rec.run_dir is not None
    (rec.run_dir / "logs").mkdir(parents=True)
    with (rec.run_dir / "usage.jsonl").open("w") as fh:
        for t in range(samples):
            for i in range(replicas):
                gpu = {"index": 0, "util_percent": float((t * i) % 100), "mem_used_bytes": 1 << 33}
                sample = {"t": 1000.0 + t, "replica": f"worker-{i}", "gpus": [gpu],
                          "cpu_percent": 50.0 + (t * i) % 40,
                          "rss_bytes": (1 << 30) + t}  # fmt: skip
                fh.write(json.dumps(sample) + "\n")
    log = "".join(f"step {s} loss {1 / (s + 1):.5f}\n" for s in range(20_000))
    for i in range(replicas):
        (rec.run_dir / "logs" / f"worker-{i}.log").write_text(log)
    metrics = rec.run_dir / "metrics"
    metrics.mkdir()
    metas = [{"name": f"chart{c}", "x": "step", "ys": ["value"], "series": ["a", "b"],
              "description": "", "smooth": "false", "with_timestamp": "false"}
             for c in range(2)]  # fmt: skip
    (metrics / "metrics.json").write_text(json.dumps({"id": rec.id, "metas": metas}))
    rnd = np.random.default_rng(4)
    for c in range(2):
        cols = [np.arange(1, points + 1)] + [np.cumsum(rnd.normal(size=points)) for _ in "ab"]
        np.savetxt(metrics / f"chart{c}.csv", np.column_stack(cols), fmt="%.6g", delimiter=",",
                   header="step,a,b", comments="")  # fmt: skip
    return rec.id


def wide_run_page(home: Path, client: FlaskClient, args: argparse.Namespace) -> None:
    """6. A 32-replica run's page and its images. Baseline: json.loads of each line of its
    usage.jsonl, the least any reading of its usage costs."""
    samples = 1800  # half an hour at the sampler's default of one a second
    run_id = wide_run(home, 32, samples, args.points)
    usage = home / "runs" / run_id / "usage.jsonl"

    def parse() -> None:
        with usage.open("rb") as fh:
            for line in fh:
                json.loads(line)

    _, base = best_of(max(2, args.repeat // 2), parse)
    shown = get_all(client, f"/runs/{run_id}")
    cold, warm = cold_and_warm(args.repeat, lambda: get_all(client, f"/runs/{run_id}"))
    label = f"run page, 32 replicas x {samples:,} usage samples, 2 charts x 2 x {args.points:,}"
    report(f"{label} ({shown} images)", "json.loads of usage.jsonl", base, cold, warm)


if __name__ == "__main__":
    main()
