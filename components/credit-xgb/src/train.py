"""credit-xgb: distributed XGBoost on CSV shards.

KubeDL's XGBoostJob gives every replica MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK (the
master is rank 0). Rank 0 starts the Rabit tracker on MASTER_PORT; all ranks join it, train on
their share of the training files (file i goes to rank i % WORLD_SIZE) and rank 0 saves the model.
"""

from __future__ import annotations

import argparse
import glob
import os

import numpy as np
import xgboost as xgb
from xgboost import collective
from xgboost.tracker import RabitTracker


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--num_round", type=int, default=300)
    p.add_argument("--max_depth", type=int, default=6)
    p.add_argument("--eta", type=float, default=0.1)
    p.add_argument("--subsample", type=float, default=0.8)
    p.add_argument("--objective", default="binary:logistic")
    p.add_argument("--tree_method", default="hist")
    p.add_argument("--early_stopping_rounds", type=int, default=20)
    for channel in ("--train", "--validation", "--model"):
        p.add_argument(channel, default="")
    return p.parse_known_args()[0]


def load(paths: list[str]) -> xgb.DMatrix:
    data = np.vstack([np.loadtxt(p, delimiter=",", skiprows=1, ndmin=2) for p in paths])
    return xgb.DMatrix(data[:, 1:], label=data[:, 0])


def csv_files(channel: str) -> list[str]:
    return [channel] if os.path.isfile(channel) else sorted(
        glob.glob(os.path.join(channel, "**", "*.csv"), recursive=True))


def main() -> None:
    args = parse_args()
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    tracker = None
    if world > 1 and rank == 0:
        tracker = RabitTracker(host_ip="0.0.0.0", n_workers=world,
                               port=int(os.environ["MASTER_PORT"]))
        tracker.start()
    files = csv_files(args.train)[rank::world]
    if not files:
        raise SystemExit(f"rank {rank}: no training files under {args.train!r}")
    env = {"dmlc_communicator": "rabit", "dmlc_tracker_uri": os.environ.get("MASTER_ADDR", ""),
           "dmlc_tracker_port": int(os.environ.get("MASTER_PORT", "9999")),
           "dmlc_task_id": str(rank)}
    with collective.CommunicatorContext(**(env if world > 1 else {})):
        train = load(files)
        evals = [(train, "train")]
        validation = csv_files(args.validation) if args.validation else []
        if validation:
            evals.append((load(validation), "validation"))
        params = {"max_depth": args.max_depth, "eta": args.eta, "subsample": args.subsample,
                  "objective": args.objective, "tree_method": args.tree_method,
                  "eval_metric": ["logloss", "auc"]}
        booster = xgb.train(params, train, num_boost_round=args.num_round, evals=evals,
                            early_stopping_rounds=args.early_stopping_rounds if validation
                            else None, verbose_eval=25)
        if collective.get_rank() == 0 and args.model:
            os.makedirs(args.model, exist_ok=True)
            booster.save_model(os.path.join(args.model, "model.json"))
            print(f"saved {os.path.join(args.model, 'model.json')}", flush=True)
    if tracker is not None:
        tracker.wait_for()


if __name__ == "__main__":
    main()
