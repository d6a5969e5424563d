"""`trainstack metrics RUN --png DIR` on 6 charts x 4 series x 100,000 points, against plain
matplotlib drawing the same data.

    .venv/bin/python benchmarks/bench_metrics.py [--points 100000] [--repeat 3]

Measured: the CLI as a user runs it (a fresh process: registry lookup, the spec check, reading
the 6 series CSVs, drawing each chart with its title, labels, legend and smoothing, writing the
PNGs). Baseline: a fresh process running a plain pyplot script on the same CSVs — `np.loadtxt`,
`plt.plot` of each series, title, labels, legend, `savefig` at the same size — the work no chart
tool can avoid. Two of the six charts ask for smoothing, as real runs do (the raw line stays,
faint, under the smoothed one). Best of --repeat runs each; prints both and the ratio (target
at most 2x).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from trainstack.registry import NewRun, Registry

CHARTS, SERIES = 6, 4

BASELINE = r"""
import sys
from pathlib import Path
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
src, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
for i in range(int(sys.argv[3])):
    data = np.loadtxt(src / f"chart{i}.csv", delimiter=",", skiprows=1, ndmin=2)
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for j in range(1, data.shape[1]):
        ax.plot(data[:, 0], data[:, j], label=f"s{j}")
    ax.set_title(f"chart{i}")
    ax.set_xlabel("step")
    ax.set_ylabel("value")
    ax.legend()
    fig.savefig(out / f"chart{i}.png")
    plt.close(fig)
"""


def make_run(home: Path, points: int) -> str:
    with Registry.open(home) as reg:
        record = reg.create(NewRun(name="bench", component="bench", component_version="1"))
    assert record.run_dir is not None
    metrics = record.run_dir / "metrics"
    metrics.mkdir(parents=True)
    rnd = np.random.default_rng(0)
    metas = []
    x = np.arange(1, points + 1, dtype=np.float64)
    for i in range(CHARTS):
        names = [f"s{j}" for j in range(1, SERIES + 1)]
        metas.append(
            {
                "name": f"chart{i}",
                "x": "step",
                "ys": ["value"],
                "series": names,
                "description": f"chart {i}",
                "smooth": "true" if i < 2 else "false",
                "with_timestamp": "false",
            }
        )
        cols = [x] + [np.cumsum(rnd.normal(size=points)) for _ in names]
        np.savetxt(
            metrics / f"chart{i}.csv",
            np.column_stack(cols),
            fmt="%.6g",
            delimiter=",",
            header=",".join(["step", *names]),
            comments="",
        )
    (metrics / "metrics.json").write_text(json.dumps({"id": record.id, "metas": metas}))
    return record.id


def timed(argv: list[str], env: dict[str, str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(argv, env=env, check=True, capture_output=True)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        run_id = make_run(home, args.points)
        env = {**os.environ, "TRAINSTACK_HOME": str(home), "MPLBACKEND": "Agg"}
        metrics = home / "runs" / run_id / "metrics"
        base = timed(
            [sys.executable, "-c", BASELINE, str(metrics), str(Path(tmp) / "base"), str(CHARTS)],
            env,
            args.repeat,
        )
        ours = timed(
            [
                sys.executable,
                "-m",
                "trainstack",
                "metrics",
                run_id,
                "--png",
                str(Path(tmp) / "ours"),
            ],
            env,
            args.repeat,
        )
        pngs = sorted(p.name for p in (Path(tmp) / "ours").glob("*.png"))
        assert len(pngs) == CHARTS, pngs
    print(f"{CHARTS} charts x {SERIES} series x {args.points:,} points")
    print(f"plain matplotlib (loadtxt + pyplot + savefig): {base:.2f}s")
    print(f"trainstack metrics --png:                      {ours:.2f}s")
    print(f"ratio: {ours / base:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()
