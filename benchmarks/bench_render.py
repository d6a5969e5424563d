"""Validate + render 1,000 generated runs; compare with the same I/O done by PyYAML's C code.

    .venv/bin/python benchmarks/bench_render.py [--runs 1000]

Measured: for every run file, `Loader.run` (load, structure and rule checks, normalize) and
`render_run` (contract, context, templates) and `dump_yaml`. Baseline: parsing the same input
files (run and component) with yaml.CSafeLoader and dumping the same output documents with
yaml.CSafeDumper — the work no renderer can avoid. Prints time per run and the ratio (target ≤ 5x).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import yaml

from trainstack.render import RenderOptions, dump_yaml, render_run
from trainstack.spec.loader import Loader

KINDS = {
    "tensorflow": {"chief": 1, "ps": 2, "worker": 4},
    "pytorch": {"master": 1, "worker": 3},
    "xgboost": {"master": 1, "worker": 2},
    "elasticbatch": {"aimaster": 1, "worker": 4},
    "mpi": {"launcher": 1, "worker": 2},
    "custom": {"worker": 2},
}
SCHEMES = [
    "oss://acme-data/{}/",
    "nas://nas.example.com/{}/",
    "pvc://datasets/{}/",
    "oss://acme-data/{}/part-0.csv",
]


def _component(kind: str) -> str:
    return f"""apiVersion: trainstack.dev/v1
kind: Component
metadata: {{name: bench-{kind}, version: 1.0.0}}
spec:
  jobType: {kind}
  image: registry.example.com/acme/{kind}:1
  code: {{git: "https://github.com/acme/{kind}.git", branch: main}}
  command: python train.py $PAI_USER_ARGS --train $PAI_INPUT_TRAIN --model $PAI_OUTPUT_MODEL
  inputs: [{{name: train}}, {{name: test}}]
  outputs: [{{name: model}}, {{name: checkpoints, preload: true}}]
  parameters:
    - {{name: epochs, type: Int, default: 10, range: {{min: 1, max: 1000}}}}
    - {{name: lr, type: Float, default: 0.01}}
    - {{name: optimizer, type: String, enum: [adam, sgd], default: adam}}
    - {{name: note, type: String, default: "a b; c"}}
    - {{name: amp, type: Bool, default: false}}
"""


def _run(i: int, kind: str, rnd: random.Random) -> str:
    roles = "\n".join(
        f"    {role}: {{replicas: {n}, cpu: {rnd.choice([2, 4, 8])}, memory: "
        f"{rnd.choice(['8Gi', '16Gi'])}, gpu: {rnd.choice([0, 1])}}}"
        for role, n in KINDS[kind].items()
    )
    return f"""apiVersion: trainstack.dev/v1
kind: Run
metadata:
  name: bench-run-{i:04d}
  experiment: bench
  tags: {{team: t{i % 7}, purpose: "a,b"}}
spec:
  component: ./{kind}.component.yaml
  parameters: {{epochs: {rnd.randint(1, 1000)}, lr: {rnd.random():.4f}, note: "run {i}"}}
  inputs: {{train: "{rnd.choice(SCHEMES).format(f"train{i}")}", test: "{SCHEMES[0].format("t")}"}}
  outputs: {{model: "oss://acme-models/{i}/", checkpoints: "nas://nas.example.com/ckpt/{i}/"}}
  resources:
{roles}
  priority: {rnd.randint(1, 9)}
  scheduling: {rnd.choice(["intelligent", "centralized", "spread"])}
  faultTolerance: {{maxRestarts: 3}}
  timeout: 24h
  env: {{NCCL_DEBUG: INFO}}
"""


def generate(directory: Path, count: int) -> list[Path]:
    rnd = random.Random(1234)
    for kind in KINDS:
        (directory / f"{kind}.component.yaml").write_text(_component(kind))
    paths = []
    kinds = list(KINDS)
    for i in range(count):
        path = directory / f"run-{i:04d}.yaml"
        path.write_text(_run(i, kinds[i % len(kinds)], rnd))
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1000)
    count = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        paths = generate(Path(tmp), count)
        options = RenderOptions()
        loader = Loader()  # caches components, as `trainstack validate DIR` does
        start = time.perf_counter()
        outputs = []
        for path in paths:
            docs = render_run(loader.run(path), options=options)
            outputs.append(docs)
            dump_yaml(docs)
        ours = time.perf_counter() - start

        inputs = [p.read_text() for p in paths] + [
            p.read_text() for p in sorted(Path(tmp).glob("*.component.yaml"))
        ]
        start = time.perf_counter()
        for text in inputs:
            yaml.load(text, Loader=yaml.CSafeLoader)
        for docs in outputs:
            yaml.dump_all(docs, Dumper=yaml.CSafeDumper, sort_keys=False)
        floor = time.perf_counter() - start
    n_docs = sum(len(d) for d in outputs)
    print(f"runs: {count}, documents: {n_docs}")
    print(f"validate + render + dump: {ours * 1000 / count:.2f} ms/run ({ours:.2f} s)")
    print(
        f"baseline (CSafeLoader parse of inputs + CSafeDumper dump of outputs): "
        f"{floor * 1000 / count:.2f} ms/run ({floor:.2f} s)"
    )
    print(f"ratio: {ours / floor:.2f}x (target <= 5x)")


if __name__ == "__main__":
    main()
