"""Plan 100 generated runs in one process; compare with rendering the same runs alone. Then
the whole process of `trainstack plan RUN --env ENV` against the provider SDKs' import floor.

    .venv/bin/python benchmarks/bench_plan.py [--runs 100] [--env local] [--repeat 5]

Measured: `trainstack plan RUN.yaml --env ENV` per run, as the CLI does it (`plan_run`: load,
render for the platform's outputs, run the run program under Pulumi's mocks, collect). Baseline:
loading and rendering the same runs with the same options, nothing else; each run is rendered
and then at once planned, so both see the same load on a shared machine. The ratio is Pulumi's
overhead for an offline plan. The platform's own plan (needed once per environment, then cached)
is timed separately and left out of both.

Whole process (the second figure): the wall time of `python -m trainstack plan RUN --env ENV`
(mnist-ddp's local run; interpreter start, imports, the platform's outputs that answer the run's
StackReference, the run's plan, the policy check, printing) against `python -c 'import pulumi,
pulumi_kubernetes'`, pair by pair, best and median of --repeat. The platform's outputs come
from the plan cache (trainstack/plan/platformcache.py; a state home of the benchmark's own,
filled by the warm-up run: what every `plan` after the first one on a machine pays); printed
beside it, the same command with TRAINSTACK_PLAN_CACHE=off (the platform planned in the
process, as before the cache) and the floor the run program itself cannot go under: `import
pulumi, pulumi_kubernetes.core.v1` (a run's ConfigMap, Secret, ... are core/v1 resources, and
that module loads every core/v1 type).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

KINDS = {
    "tensorflow": {"chief": 1, "ps": 1, "worker": 2},
    "pytorch": {"master": 1, "worker": 3},
    "xgboost": {"master": 1, "worker": 2},
}


def _component(kind: str) -> str:
    return f"""apiVersion: trainstack.dev/v1
kind: Component
metadata: {{name: bench-{kind}, version: 1.0.0}}
spec:
  jobType: {kind}
  image: registry.example.com/acme/{kind}:1
  code: {{git: "https://github.com/acme/{kind}.git", branch: main}}
  command: python train.py $PAI_USER_ARGS --train $PAI_INPUT_TRAIN --model $PAI_OUTPUT_MODEL
  inputs: [{{name: train}}]
  outputs: [{{name: model}}, {{name: checkpoints, preload: true}}]
  parameters:
    - {{name: epochs, type: Int, default: 10, range: {{min: 1, max: 1000}}}}
    - {{name: lr, type: Float, default: 0.01}}
"""


def _run(i: int, kind: str) -> str:
    roles = "\n".join(
        f"    {role}: {{replicas: {n}, cpu: 4, memory: 16Gi, gpu: {i % 2}}}"
        for role, n in KINDS[kind].items()
    )
    return f"""apiVersion: trainstack.dev/v1
kind: Run
metadata:
  name: bench-{kind}-{i:03d}
  experiment: bench
  tags: {{team: vision}}  # priorities 1-7: team vision's maxPriority on `local`
spec:
  component: ../components/{kind}.yaml
  parameters: {{epochs: {1 + i % 50}, lr: 0.0{1 + i % 9}}}
  inputs: {{train: nas://nas.example.internal/data/bench-{i}/}}
  outputs: {{model: pvc://models/bench-{i}/, checkpoints: pvc://checkpoints/bench-{i}/}}
  resources:
{roles}
  priority: {1 + i % 7}
"""


def _generate(root: Path, count: int) -> list[Path]:
    (root / "components").mkdir()
    for kind in KINDS:
        (root / "components" / f"{kind}.yaml").write_text(_component(kind))
    (root / "runs").mkdir()
    kinds = list(KINDS)
    paths = []
    for i in range(count):
        path = root / "runs" / f"run-{i:03d}.yaml"
        path.write_text(_run(i, kinds[i % len(kinds)]))
        paths.append(path)
    return paths


def _paired(
    first: Callable[[Path], object], second: Callable[[Path], object], paths: list[Path]
) -> tuple[list[float], list[float]]:
    """Each run through `first`, then at once through `second`: on a shared machine both see
    the same load, which two loops one after the other do not."""
    a: list[float] = []
    b: list[float] = []
    for path in paths:
        for fn, times in ((first, a), (second, b)):
            start = time.perf_counter()
            fn(path)
            times.append(time.perf_counter() - start)
    return a, b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--env", default="local")  # bindings are nas:// and pvc://: any env
    parser.add_argument("--repeat", type=int, default=5, help="whole-process pairs")
    parser.add_argument("--only", default="inprocess,process", help="inprocess, process")
    args = parser.parse_args()
    only = set(args.only.split(","))
    with tempfile.TemporaryDirectory() as home:
        # The benchmark's own state home: the in-process platform plan is a real one (not an
        # entry an earlier run left), and nothing is written to the user's.
        os.environ["TRAINSTACK_HOME"] = home
        if "inprocess" in only:
            _in_process(args)
        if "process" in only:
            _whole_process(args.env, args.repeat)


def _wall(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=REPO, capture_output=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{argv} failed: {done.stderr.decode()[-2000:]}")
    return took


def _whole_process(env_name: str, repeat: int) -> None:
    run = str(REPO / "components" / "mnist-ddp" / "runs" / "local.yaml")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    plan = [sys.executable, "-m", "trainstack", "plan", run, "--env", env_name]
    commands = {
        "plan": plan,
        "uncached": ["env", "TRAINSTACK_PLAN_CACHE=off", *plan],
        "floor": [sys.executable, "-c", "import pulumi, pulumi_kubernetes"],
        "core": [sys.executable, "-c", "import pulumi, pulumi_kubernetes.core.v1"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():
        _wall(argv, env)  # warm: bytecode, page cache, the plan cache (in main's state home)
    for _ in range(repeat):
        for name, argv in commands.items():
            times[name].append(_wall(argv, env))
    best = {name: min(t) for name, t in times.items()}
    median = {name: statistics.median(t) for name, t in times.items()}
    print(
        f"whole process, {repeat} rounds: trainstack plan RUN --env {env_name} best "
        f"{best['plan']:.3f} s, median {median['plan']:.3f} s; import pulumi, pulumi_kubernetes "
        f"best {best['floor']:.3f} s, median {median['floor']:.3f} s"
    )
    ratio = median["plan"] / median["floor"]
    print(
        f"    ratio: {ratio:.2f}x of medians, {best['plan'] / best['floor']:.2f}x of bests "
        f"[target <= 2x: {'met' if ratio <= 2 else 'NOT met'}]; the run program's own floor, "
        f"import pulumi, pulumi_kubernetes.core.v1: best {best['core']:.3f} s, median "
        f"{median['core']:.3f} s ({median['plan'] / median['core']:.2f}x of it)"
    )
    print(
        f"    with TRAINSTACK_PLAN_CACHE=off (the platform planned in the process): best "
        f"{best['uncached']:.3f} s, median {median['uncached']:.3f} s "
        f"({median['uncached'] / median['floor']:.2f}x of the floor's median)"
    )


def _in_process(args: argparse.Namespace) -> None:

    from trainstack.envfile import find_project
    from trainstack.infra.run.options import render_options
    from trainstack.plan.service import plan_run, platform_outputs
    from trainstack.render import render_run
    from trainstack.spec import load_run

    start = time.perf_counter()
    outputs, _ = platform_outputs(find_project(REPO), args.env)  # once per env, then cached
    platform_s = time.perf_counter() - start

    with tempfile.TemporaryDirectory() as tmp:
        paths = _generate(Path(tmp), args.runs)

        def render_only(path: Path) -> object:
            run = load_run(path)
            return render_run(run, options=render_options(outputs, run, args.env))

        def plan(path: Path) -> object:
            result = plan_run(path, args.env, start=REPO)
            assert any(r.type.startswith("kubernetes:") for r in result.resources)
            return result

        render_only(paths[0])  # warm imports and template caches for both
        plan(paths[0])
        rendered, planned = _paired(render_only, plan, paths)

    r_ms, p_ms = statistics.mean(rendered) * 1e3, statistics.mean(planned) * 1e3
    print(f"runs: {args.runs} ({', '.join(KINDS)}), env {args.env!r}, one process")
    print(f"platform plan (once per env, cached): {platform_s * 1e3:.1f} ms")
    print(f"render alone : {r_ms:7.2f} ms/run (median {statistics.median(rendered) * 1e3:.2f})")
    print(f"plan         : {p_ms:7.2f} ms/run (median {statistics.median(planned) * 1e3:.2f})")
    per_run = statistics.median(p / r for p, r in zip(planned, rendered, strict=True))
    print(f"median of the per-run ratios (each run rendered, then planned): {per_run:.1f}x")
    print(
        f"ratio plan/render: {p_ms / r_ms:.1f}x  (Pulumi's offline overhead per run: "
        f"{p_ms - r_ms:.2f} ms)"
    )


if __name__ == "__main__":
    main()
