"""mnist-ddp: a small CNN trained with PyTorch DDP on MNIST-like digits it generates itself.

Reads everything the platform's way: hyperparameters and channel paths as flags (the command
passes `$PAI_USER_ARGS --train $PAI_INPUT_TRAIN --model … --checkpoints …`), the distributed
setup from MASTER_ADDR / MASTER_PORT / WORLD_SIZE / RANK (gloo, so it runs on CPUs), the metrics
directory from $METRICS. Checkpoints go to the `checkpoints` output after every epoch and are
read back on start, so a restarted job (or a run seeded with `--resume`) continues where the last
one stopped.
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import os
import sys
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402 - after the warning filter
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402
from torch.utils.data.distributed import DistributedSampler  # noqa: E402

CHANNEL_FLAGS = ("--train", "--model", "--checkpoints")


def parse_args(argv: list[str]) -> argparse.Namespace:
    # An unbound channel expands to nothing in the command (`--train --model X`): read that as
    # an empty value rather than swallowing the next flag.
    fixed: list[str] = []
    for i, arg in enumerate(argv):
        fixed.append(arg)
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if arg in CHANNEL_FLAGS and (nxt is None or nxt.startswith("--")):
            fixed.append("")
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    p.add_argument("--samples", type=int, default=2048)
    p.add_argument("--amp", type=_bool, default=False)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--train", default="")
    p.add_argument("--model", default="")
    p.add_argument("--checkpoints", default="")
    args, unknown = p.parse_known_args(fixed)
    if unknown:
        print(f"ignoring unknown arguments: {unknown}", flush=True)
    return args


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean, got {text!r}")


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(16 * 5 * 5, 10),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def make_data(samples: int, seed: int) -> TensorDataset:
    """Ten fixed 28x28 'digit' templates plus shifts and noise: learnable in a few epochs, and
    every rank generates exactly the same set from the seed."""
    gen = torch.Generator().manual_seed(seed)
    templates = (torch.rand(10, 1, 28, 28, generator=gen) > 0.7).float()
    labels = torch.randint(0, 10, (samples,), generator=gen)
    shifts = torch.randint(-2, 3, (samples, 2), generator=gen)
    images = torch.empty(samples, 1, 28, 28)
    for i in range(samples):
        dx, dy = int(shifts[i, 0]), int(shifts[i, 1])
        images[i] = torch.roll(templates[labels[i]], shifts=(dx, dy), dims=(1, 2))
    images += 0.3 * torch.randn(images.shape, generator=gen)
    return TensorDataset(images, labels)


def load_data(train: str, samples: int, seed: int) -> TensorDataset:
    data_file = Path(train) / "data.pt" if train and Path(train).is_dir() else Path(train or "-")
    if data_file.is_file():
        blob = torch.load(data_file)
        return TensorDataset(blob["x"], blob["y"])
    return make_data(samples, seed)


def latest_checkpoint(ckpt_dir: Path) -> Path | None:
    pointer = ckpt_dir / "latest"
    if not pointer.is_file():
        return None
    path = ckpt_dir / pointer.read_text().strip()
    return path if path.is_file() else None


def save_atomically(obj: object, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


# The metrics spec (docs/metrics.md): two charts, `epoch` with two y-axes (no series) and
# `steps` with two series on one axis, smoothed.
METAS = [
    {"name": "epoch", "x": "epoch", "ys": ["loss", "accuracy"], "series": [],
     "description": "mean training loss and accuracy per epoch, all ranks", "smooth": "false",
     "with_timestamp": "false", "units": {"loss": "nats"}},
    {"name": "steps", "x": "step", "ys": ["value"], "series": ["batch_loss", "batch_accuracy"],
     "description": "rank 0 per batch", "smooth": "true", "with_timestamp": "false"},
]


def write_metrics(history: list[dict[str, float]], steps: list[list[float]]) -> None:
    """`metrics.json` chart metadata plus one CSV per chart (x column, then one per series, or
    one per y-axis when the chart has no series); rewritten whole after every epoch."""
    target = os.environ.get("METRICS")
    if not target:
        return
    out = Path(target)
    out.mkdir(parents=True, exist_ok=True)
    run_id = os.environ.get("TRAINSTACK_RUN_ID", os.environ.get("PAI_JOB_ID", ""))
    tables = {
        "epoch": [[int(r["epoch"]), f"{r['loss']:.6f}", f"{r['accuracy']:.6f}"]
                  for r in history],
        "steps": [[int(step), f"{loss:.6f}", f"{acc:.6f}"] for step, loss, acc in steps],
    }
    for meta in METAS:
        name = str(meta["name"])
        columns = meta["series"] or meta["ys"]
        tmp = out / f"{name}.csv.tmp"
        with open(tmp, "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow([meta["x"], *columns])
            writer.writerows(tables[name])
        os.replace(tmp, out / f"{name}.csv")
    (out / "metrics.json").write_text(json.dumps({"id": run_id, "metas": METAS}, indent=2))


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    distributed = world > 1
    if distributed and "OMP_NUM_THREADS" not in os.environ:
        # Several ranks share this machine's cores (as torchrun assumes): one thread each
        # avoids oversubscription that makes every step many times slower.
        torch.set_num_threads(1)
    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(args.seed)
    say = print if rank == 0 else (lambda *a, **k: None)
    print(f"rank {rank}/{world} ready (pid {os.getpid()}, master "
          f"{os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')})", flush=True)

    data = load_data(args.train, args.samples, args.seed)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, seed=args.seed) \
        if distributed else None
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler,
                        shuffle=sampler is None)
    model: nn.Module = SmallCNN()
    if distributed:
        model = DistributedDataParallel(model)
    opt: torch.optim.Optimizer = (torch.optim.Adam(model.parameters(), lr=args.lr)
                                  if args.optimizer == "adam"
                                  else torch.optim.SGD(model.parameters(), lr=args.lr))
    loss_fn = nn.CrossEntropyLoss()

    ckpt_dir = Path(args.checkpoints) if args.checkpoints else None
    start_epoch, history = 1, []
    steps: list[list[float]] = []  # [step, loss, accuracy] of rank 0's batches
    found = latest_checkpoint(ckpt_dir) if ckpt_dir else None
    if found is not None:
        state = torch.load(found)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start_epoch, history = int(state["epoch"]) + 1, list(state["history"])
        steps = list(state.get("steps", []))  # checkpoints from before steps were kept: none
        print(f"rank {rank}: resuming from {found.name} (epoch {state['epoch']})", flush=True)

    for epoch in range(start_epoch, args.epochs + 1):
        if sampler is not None:
            sampler.set_epoch(epoch)
        model.train()
        total = correct = 0
        loss_sum = 0.0
        started = time.perf_counter()
        for x, y in loader:
            opt.zero_grad()
            logits = model(x)
            loss = loss_fn(logits, y)
            loss.backward()
            opt.step()
            hits, batch_loss = int((logits.argmax(1) == y).sum()), loss.item()
            loss_sum += batch_loss * len(y)
            correct += hits
            total += len(y)
            if rank == 0:
                steps.append([float(len(steps) + 1), batch_loss, hits / len(y)])
        stats = torch.tensor([loss_sum, float(correct), float(total)])
        if distributed:
            dist.all_reduce(stats)
        row = {"epoch": float(epoch), "loss": float(stats[0] / stats[2]),
               "accuracy": float(stats[1] / stats[2])}
        history.append(row)
        say(f"epoch {epoch}/{args.epochs} loss {row['loss']:.4f} accuracy "
            f"{row['accuracy']:.3f} ({time.perf_counter() - started:.1f}s)", flush=True)
        if rank == 0:
            if ckpt_dir is not None:
                ckpt_dir.mkdir(parents=True, exist_ok=True)
                name = f"epoch-{epoch:04d}.pt"
                save_atomically({"model": model.state_dict(), "optimizer": opt.state_dict(),
                                 "epoch": epoch, "history": history, "steps": steps},
                                ckpt_dir / name)
                (ckpt_dir / "latest.tmp").write_text(name)
                os.replace(ckpt_dir / "latest.tmp", ckpt_dir / "latest")
            write_metrics(history, steps)
        if distributed:
            dist.barrier()  # nobody starts the next epoch before the checkpoint exists

    if rank == 0 and args.model:
        model_dir = Path(args.model)
        model_dir.mkdir(parents=True, exist_ok=True)
        inner = model.module if isinstance(model, DistributedDataParallel) else model
        save_atomically(inner.state_dict(), model_dir / "model.pt")
        final = history[-1] if history else {}
        (model_dir / "model.json").write_text(json.dumps(
            {"epochs": args.epochs, "world_size": world, **final}, indent=2))
        say(f"model written to {model_dir / 'model.pt'}", flush=True)
    if distributed:
        # DDP's reducer holds the process group. Left to interpreter shutdown, gloo's threads are
        # torn down there, and a rank aborts ("terminate called without an active exception",
        # exit 134, which KubeDL does not retry) a few times in a hundred on a busy machine. So the
        # model goes first, while the interpreter is whole; then everyone leaves together.
        del model, opt
        gc.collect()
        dist.barrier()
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
