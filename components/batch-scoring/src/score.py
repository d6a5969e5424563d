"""batch-scoring: score CSV records with a logistic model, sharded over elastic workers.

The model comes in on the `model` input channel: a directory holding `model.json` =
{"weights": [...], "bias": b}. Each worker learns its index from ElASTICBATCH_CONFIG (KubeDL's
spelling) and scores the files whose position modulo the number of workers is its index; each
input file gives one output file, written atomically, so a worker that is restarted or replaced
skips what is already done. The AIMaster (which gets no ElASTICBATCH_CONFIG) has nothing to do
but must not end the job: it waits until the workers' success ends it.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import time
from pathlib import Path


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--id-column", default="id")
    p.add_argument("--with-label", type=lambda s: s.lower() == "true", default=False)
    p.add_argument("--records", default="")
    p.add_argument("--model", default="")
    p.add_argument("--scores", default="")
    return p.parse_known_args()[0]


def shard() -> tuple[int, int] | None:
    """(this worker's index, number of workers); None in the AIMaster."""
    job_file = Path(os.environ.get("PAI_CONFIG_DIR", "/ml/input/config")) / "training_job.json"
    job = json.loads(job_file.read_text()) if job_file.is_file() else {}
    roles = job.get("resources", {})
    config = os.environ.get("ElASTICBATCH_CONFIG")  # noqa: SIM112 (KubeDL's spelling)
    if config is None:
        return None if "aimaster" in roles else (0, 1)
    index = int(json.loads(config).get("task", {}).get("index", 0))
    workers = int(roles.get("worker", {}).get("replicas", 1))
    return index, max(workers, index + 1)


def load_model(channel: str) -> tuple[list[float], float]:
    path = Path(channel)
    model = json.loads((path if path.is_file() else path / "model.json").read_text())
    return [float(w) for w in model["weights"]], float(model["bias"])


def score_file(src: Path, dst: Path, weights: list[float], bias: float,
               args: argparse.Namespace) -> int:
    tmp = dst.with_suffix(".part")
    count = 0
    with src.open(newline="") as fin, tmp.open("w", newline="") as fout:
        reader = csv.DictReader(fin)
        writer = csv.writer(fout)
        writer.writerow(["id", "score", *(["label"] if args.with_label else [])])
        for row in reader:
            key = row.pop(args.id_column)
            z = bias + sum(w * float(v) for w, v in zip(weights, row.values(), strict=True))
            p = 1 / (1 + math.exp(-z))
            writer.writerow([key, f"{p:.6f}", *([int(p >= args.threshold)] if args.with_label
                                                 else [])])
            count += 1
    os.replace(tmp, dst)
    return count


def main() -> None:
    args = parse_args()
    place = shard()
    if place is None:
        # KubeDL ends an ElasticBatchJob when the AIMaster exits 0 (stopping the workers) or
        # when every worker has: an AIMaster with nothing to do stays up until it is stopped.
        print("aimaster: the workers do the scoring", flush=True)
        while True:
            time.sleep(3600)
    index, workers = place
    weights, bias = load_model(args.model)
    root = Path(args.records)
    files = [root] if root.is_file() else sorted(root.rglob("*.csv"))
    out = Path(args.scores)
    out.mkdir(parents=True, exist_ok=True)
    mine = files[index::workers]
    print(f"worker {index}/{workers}: {len(mine)} of {len(files)} file(s)", flush=True)
    for src in mine:
        dst = out / (src.stem + ".scores.csv")
        if dst.exists():
            continue  # done before a restart
        print(f"{src.name}: {score_file(src, dst, weights, bias, args)} record(s)", flush=True)


if __name__ == "__main__":
    main()
