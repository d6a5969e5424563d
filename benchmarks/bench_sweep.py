"""How much does `trainstack sweep --local` add to its trials? Target: under 0.3 s per trial.

Baseline: the same trials run as plain `trainstack run TRIAL.yaml --local`, one after another
(the very Run files the sweep wrote, each in a fresh state home so nothing is shared). The sweep
runs them one at a time too (`--parallel 1`), so the difference is the sweep's own work:
starting it (optuna, its SQLite storage, the PNG at the end) and, per trial, asking optuna,
writing the trial's Run file, the registry look-ups, polling and reading the objective.

Printed: for N trials, the sweep's wall time as a ratio to the baseline's and the overhead per
trial (all of it, spread over N); and the marginal overhead per trial (the slope between a small
and a large sweep: what one more trial costs, fixed start-up costs excluded).

Run: .venv/bin/python benchmarks/bench_sweep.py [--small 4] [--large 12] [--repeat 2]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

COMPONENT = {
    "apiVersion": "trainstack.dev/v1",
    "kind": "Component",
    "metadata": {"name": "bench-trial", "version": "1.0.0"},
    "spec": {
        "jobType": "custom",
        "image": "registry.example.com/bench/python:3",
        "code": "./src",
        "command": "python main.py $PAI_USER_ARGS",
        "parameters": [
            {"name": "x", "type": "Int", "default": 0, "range": {"min": 0, "max": 1000}}
        ],
    },
}
MAIN = """\
import json, os, sys
x = int(sys.argv[sys.argv.index("--x") + 1])
out = os.environ["METRICS"]
with open(os.path.join(out, "metrics.json"), "w") as f:
    json.dump({"id": "bench", "metas": [{"name": "score", "x": "step", "ys": ["value"]}]}, f)
with open(os.path.join(out, "score.csv"), "w") as f:
    f.write(f"step,value\\n1,{x}\\n")
"""


def project(root: Path, trials: int) -> Path:
    comp = root / "bench-trial"
    (comp / "src").mkdir(parents=True)
    (comp / "src" / "main.py").write_text(MAIN)
    (comp / "component.yaml").write_text(yaml.safe_dump(COMPONENT))
    (comp / "base.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "trainstack.dev/v1",
                "kind": "Run",
                "metadata": {"name": "bench-base"},
                "spec": {"component": "./component.yaml"},
            }
        )
    )
    sweep = comp / f"sweep-{trials}.yaml"
    sweep.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "trainstack.dev/v1",
                "kind": "Sweep",
                "metadata": {"name": f"bench-{trials}"},
                "spec": {
                    "run": "./base.yaml",
                    "parameters": {"x": list(range(trials))},
                    "objective": {"metric": "score/value", "goal": "maximize"},
                    "budget": {"parallel": 1},
                },
            }
        )
    )
    return sweep


def trainstack(*args: str | Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "trainstack", *map(str, args)],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def measure(trials: int) -> tuple[float, float]:
    """(sweep wall time, baseline wall time) for a sweep of `trials` trials."""
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        root = Path(tmp)
        sweep = project(root, trials)
        swept = trainstack("sweep", sweep, "--local", "--home", root / "home-sweep")
        files = sorted(
            (root / "home-sweep" / "sweeps" / f"bench-{trials}" / "trials").glob("*.yaml")
        )
        assert len(files) == trials, files
        base = 0.0
        for i, f in enumerate(files):
            base += trainstack("run", f, "--local", "--home", root / f"home-run-{i}")
        return swept, base


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", type=int, default=4)
    ap.add_argument("--large", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    results: dict[int, list[tuple[float, float]]] = {args.small: [], args.large: []}
    for _ in range(args.repeat):
        for n in (args.small, args.large):
            results[n].append(measure(n))
    over: dict[int, float] = {}
    for n, pairs in results.items():
        swept = statistics.median(p[0] for p in pairs)
        base = statistics.median(p[1] for p in pairs)
        over[n] = swept - base
        print(
            f"{n:3d} trials: sweep {swept:6.2f} s, plain runs one after another {base:6.2f} s, "
            f"ratio {swept / base:.2f}x, overhead {over[n] / n:.3f} s per trial "
            f"(start-up included)"
        )
    slope = (over[args.large] - over[args.small]) / (args.large - args.small)
    fixed = over[args.small] - slope * args.small
    print(
        f"marginal overhead per trial: {slope:.3f} s (target < 0.3 s); fixed start-up of the "
        f"sweep: {fixed:.2f} s"
    )


if __name__ == "__main__":
    main()
