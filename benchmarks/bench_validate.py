"""How fast is `trainstack validate`? Two figures, each a ratio to a named baseline.

(a) Validating 1,000 generated component + run pairs (real files in a temporary directory, the
    way `trainstack validate DIR` does it: every run resolves and checks its component) per spec,
    as a ratio to only parsing the same files with `yaml.CSafeLoader`. Target: <= 5x.
(b) Wall time of the `trainstack validate ONE.yaml` command (a subprocess; best and median of
    several runs) as a ratio to `python -c "import yaml, jinja2, cerberus"`. Target: <= 1.5x.

Run: .venv/bin/python benchmarks/bench_validate.py [--pairs 1000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

COMPONENT = """\
apiVersion: trainstack.dev/v1
kind: Component
metadata:
  name: bench-{i}
  version: 1.{minor}.0
  description: Generated component number {i} for the validate benchmark.
  versionDescription: Generated.
spec:
  jobType: {job_type}
  image: registry-vpc.cn-hangzhou.aliyuncs.com/acme/train:{i}
  code: {code}
  command: python main.py $PAI_USER_ARGS --train $PAI_INPUT_TRAIN --model $PAI_OUTPUT_MODEL
  inputs:
    - {{name: train, description: training data, required: true}}
    - {{name: test}}
  outputs:
    - {{name: model}}
    - {{name: checkpoints, preload: true}}
  parameters:
    - {{name: epochs, type: Int, default: 10, range: {{min: 1, max: 1000}}}}
    - {{name: lr, type: Float, default: 0.01, range: {{min: 0.0, max: 1.0}}}}
    - {{name: batch-size, type: Int, default: 64, enum: [32, 64, 128]}}
    - {{name: optimizer, type: String, default: adam, enum: [adam, sgd]}}
    - {{name: amp, type: Bool, default: false}}
  constraints: {{machineType: [cpu, gpu], multiNode: true, multiGpu: false}}
"""

RUN = """\
apiVersion: trainstack.dev/v1
kind: Run
metadata:
  name: bench-run-{i}
  description: Generated run number {i}.
  experiment: bench
  tags: {{team: vision, purpose: "baseline,ablation"}}
spec:
  component: ../component.yaml
  parameters: {{epochs: {epochs}, lr: 0.05, optimizer: sgd}}
  inputs:
    train: {{uri: "oss://acme-data/bench/{i}/", mode: download}}
    test: oss://acme-data/bench/{i}/test.csv
  outputs: {{model: "oss://acme-models/bench/{i}/", checkpoints: "oss://acme-ckpt/bench/{i}/"}}
  resources:
{resources}
  priority: {priority}
  scheduling: spread
  spot: {{bidDiscount: 30}}
  faultTolerance: {{maxRestarts: 3}}
  env: {{NCCL_DEBUG: INFO, OMP_NUM_THREADS: "4"}}
  timeout: 24h
"""

ROLES = {
    "pytorch": ("master", "worker"),
    "tensorflow": ("chief", "worker"),
    "xgboost": ("master", "worker"),
    "mpi": ("launcher", "worker"),
}


def generate(root: Path, pairs: int) -> list[Path]:
    files = []
    kinds = list(ROLES)
    for i in range(pairs):
        job_type = kinds[i % len(kinds)]
        comp_dir = root / f"c{i:04d}"
        (comp_dir / "runs").mkdir(parents=True)
        code = f"oss://acme-code/bench/{i}/"
        if i % 2 == 0:
            (comp_dir / "src").mkdir()
            (comp_dir / "src" / "main.py").write_text("print('bench')\n")
            code = "./src"
        first, second = ROLES[job_type]
        resources = (
            f"    {first}: {{replicas: 1, cpu: 4, memory: 16Gi, gpu: 1, "
            f"sharedMemory: 8Gi}}\n    {second}: {{replicas: 3, cpu: 4, memory: 16Gi, "
            "gpu: 1}"
        )
        (comp_dir / "component.yaml").write_text(
            COMPONENT.format(i=i, minor=i % 7, job_type=job_type, code=code)
        )
        (comp_dir / "runs" / "run.yaml").write_text(
            RUN.format(i=i, epochs=1 + i % 900, priority=1 + i % 9, resources=resources)
        )
        files += [comp_dir / "component.yaml", comp_dir / "runs" / "run.yaml"]
    return files


def parse_only(files: list[Path]) -> float:
    start = time.perf_counter()
    for f in files:
        yaml.load(f.read_text(), Loader=yaml.CSafeLoader)
    return time.perf_counter() - start


def validate_all(files: list[Path]) -> float:
    from trainstack.spec.check import validate

    start = time.perf_counter()
    report = validate(files)
    elapsed = time.perf_counter() - start
    if not report.ok or len(report.runs) != len(files) // 2:
        raise SystemExit(
            "benchmark specs did not validate:\n"
            + "\n".join(d.render() for d in report.diagnostics[:10])
        )
    return elapsed


def wall(argv: list[str], repeat: int) -> list[float]:
    times = []
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "0"}
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, env=env, cwd=ROOT)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"{argv} failed: {proc.stderr.decode()}")
    return times


def trainstack_argv() -> list[str]:
    script = Path(sys.executable).with_name("trainstack")
    return [str(script)] if script.exists() else [sys.executable, "-m", "trainstack"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-validate-"))
    try:
        files = generate(tmp, args.pairs)
        parse_only(files[:50]), validate_all(files[:50])  # warm caches and imports
        parse_s = min(parse_only(files) for _ in range(3))
        validate_s = min(validate_all(files) for _ in range(3))
    finally:
        shutil.rmtree(tmp)
    n = len(files)
    print(f"(a) {args.pairs} component+run pairs = {n} spec files")
    print(f"    yaml.CSafeLoader parse only : {parse_s * 1e3 / n:7.3f} ms/spec")
    print(f"    trainstack validate         : {validate_s * 1e3 / n:7.3f} ms/spec")
    ratio_a = validate_s / parse_s
    print(f"    ratio {ratio_a:.2f}x (target <= 5x) -> {'OK' if ratio_a <= 5 else 'MISSED'}")

    one = ROOT / "components" / "mnist-ddp" / "runs" / "baseline.yaml"
    baseline_argv = [sys.executable, "-c", "import yaml, jinja2, cerberus"]
    validate_argv = [*trainstack_argv(), "validate", str(one)]
    wall(baseline_argv, 2), wall(validate_argv, 2)  # warm the page cache and .pyc files
    base = wall(baseline_argv, args.repeat)
    ours = wall(validate_argv, args.repeat)
    print(f"(b) trainstack validate {one.relative_to(ROOT)} ({args.repeat} runs each)")
    print(
        f"    python -c 'import yaml, jinja2, cerberus': best {min(base) * 1e3:6.1f} ms, "
        f"median {statistics.median(base) * 1e3:6.1f} ms"
    )
    print(
        f"    trainstack validate ONE.yaml           : best {min(ours) * 1e3:6.1f} ms, "
        f"median {statistics.median(ours) * 1e3:6.1f} ms"
    )
    best, median = min(ours) / min(base), statistics.median(ours) / statistics.median(base)
    print(
        f"    ratio best {best:.2f}x, median {median:.2f}x (target <= 1.5x) -> "
        f"{'OK' if median <= 1.5 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
