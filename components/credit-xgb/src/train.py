"""credit-xgb: distributed XGBoost on CSV shards.

KubeDL's XGBoostJob gives every replica MASTER_ADDR and MASTER_PORT (the master's Service and
port) and WORLD_SIZE (the number of replicas) — but RANK is the index *within each role*, so the
master and worker 0 both see RANK=0. The replica's own identity comes from trainstack's contract
instead: TRAINSTACK_ROLE and TRAINSTACK_REPLICA_INDEX. From those:

- exactly one replica, master 0, starts the Rabit tracker, on MASTER_PORT;
- every replica gets a distinct task id (master 0, then worker i as i + 1), joins the tracker
  with it, trains on the CSV files whose position modulo WORLD_SIZE is its task id — so every
  shard is read exactly once — and task 0 saves the model.

Labels are in the first column of every CSV file, features in the rest; files have a header.
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


def task_id() -> int:
    """This replica's place among all of them: master 0 first, then the workers."""
    role = os.environ.get("TRAINSTACK_ROLE", "master")
    index = int(os.environ.get("TRAINSTACK_REPLICA_INDEX", "0"))
    return index if role == "master" else index + 1


def load(paths: list[str]) -> xgb.DMatrix:
    data = np.vstack([np.loadtxt(p, delimiter=",", skiprows=1, ndmin=2) for p in paths])
    return xgb.DMatrix(data[:, 1:], label=data[:, 0])


def csv_files(channel: str) -> list[str]:
    return [channel] if os.path.isfile(channel) else sorted(
        glob.glob(os.path.join(channel, "**", "*.csv"), recursive=True))


def main() -> None:
    args = parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    task = task_id()
    tracker = None
    if world > 1 and task == 0:
        # Listens on every interface: the workers reach it through the master's Service.
        tracker = RabitTracker(n_workers=world, host_ip="0.0.0.0",
                               port=int(os.environ["MASTER_PORT"]), sortby="task")
        tracker.start()
    files = csv_files(args.train)[task::world]
    if not files:
        raise SystemExit(f"task {task}: no training files for me under {args.train!r} "
                         f"({world} replicas need at least {world} files)")
    print(f"task {task}/{world}: training on {', '.join(os.path.basename(f) for f in files)}",
          flush=True)
    env = {"dmlc_communicator": "rabit", "dmlc_tracker_uri": os.environ.get("MASTER_ADDR", ""),
           "dmlc_tracker_port": int(os.environ.get("MASTER_PORT", "9999")),
           "dmlc_task_id": str(task)}
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
