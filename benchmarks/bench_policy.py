"""`trainstack policy check RUN --env ENV` against `trainstack plan RUN --env ENV`, side by side.

    .venv/bin/python benchmarks/bench_policy.py [--repeat 20] [--env ack-dev]

Measured: `check_run` (plan the run under mocks, then every rule over what it registers, with
the environment's settings and context). Baseline: `plan_run` of the same run, nothing else. Both
run alternately in one process on a run that fits ack-dev (mnist-ddp with the platform's image
and buckets), so the platform's own plan (cached after the first call) is in neither. Target:
ratio <= 1.2.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
REGISTRY = "trainstack-ack-dev-registry-vpc.cn-hangzhou.cr.aliyuncs.com"  # ack-dev's platform


def make_run(folder: Path) -> Path:
    component = folder / "mnist"
    shutil.copytree(
        REPO / "components" / "mnist-ddp", component, ignore=shutil.ignore_patterns("runs")
    )
    spec = yaml.safe_load((component / "component.yaml").read_text())
    spec["spec"]["image"] = f"{REGISTRY}/acme/torch:2.3"
    (component / "component.yaml").write_text(yaml.safe_dump(spec))
    (component / "runs").mkdir()
    run = {
        "apiVersion": "trainstack.dev/v1",
        "kind": "Run",
        "metadata": {"name": "bench-policy", "tags": {"team": "vision"}},
        "spec": {
            "component": "../component.yaml",
            "inputs": {"train": "oss://acme-trainstack-dev-data/mnist/"},
            "resources": {
                "master": {"replicas": 1, "cpu": 4, "memory": "16Gi", "gpu": 1},
                "worker": {"replicas": 3, "cpu": 4, "memory": "16Gi", "gpu": 1},
            },
        },
    }
    path = component / "runs" / "run.yaml"
    path.write_text(yaml.safe_dump(run))
    return path


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--env", default="ack-dev")
    args = parser.parse_args()

    from trainstack.plan.service import plan_run
    from trainstack.policy.check import check_run

    with tempfile.TemporaryDirectory() as tmp:
        run = make_run(Path(tmp))
        report = check_run(run, args.env, REPO)  # warm: the platform's plan, imports
        plan_run(run, args.env, REPO)
        plans: list[float] = []
        checks: list[float] = []
        for _ in range(args.repeat):
            plans.append(timed(lambda: plan_run(run, args.env, REPO)))
            checks.append(timed(lambda: check_run(run, args.env, REPO)))
    plan_s, check_s = statistics.median(plans), statistics.median(checks)
    print(
        f"run: mnist-ddp (master + 3 workers) on {args.env}, {len(report.violations)} "
        f"violation(s); {args.repeat} alternating repeats, medians"
    )
    print(f"baseline  plan_run:  {plan_s * 1000:8.1f} ms")
    print(f"measured  check_run: {check_s * 1000:8.1f} ms")
    print(f"ratio policy check / plan: {check_s / plan_s:.3f} (target <= 1.2)")


if __name__ == "__main__":
    main()
