"""cifar-horovod: ResNet-18 on 32x32 images with Horovod ring-allreduce over MPI.

`mpirun` (started by the MPIJob's launcher) runs one process per GPU; Horovod gives each its rank
and local rank, the learning rate scales with the number of ranks, and rank 0 broadcasts the
initial weights and saves the model.
"""

from __future__ import annotations

import argparse
import os

import horovod.torch as hvd
import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--base-lr", type=float, default=0.0125)
    p.add_argument("--fp16-allreduce", type=lambda s: s.lower() == "true", default=True)
    p.add_argument("--data", default="")
    p.add_argument("--model", default="")
    return p.parse_known_args()[0]


def load(data: str) -> TensorDataset:
    path = data if data.endswith(".npz") else os.path.join(data, "train.npz")
    arrays = np.load(path)
    x = torch.from_numpy(arrays["x"]).permute(0, 3, 1, 2).float().div(255)
    return TensorDataset(x, torch.from_numpy(arrays["y"]).long())


def main() -> None:
    args = parse_args()
    hvd.init()
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(hvd.local_rank())
    device = torch.device("cuda" if cuda else "cpu")
    dataset = load(args.data)
    sampler = DistributedSampler(dataset, num_replicas=hvd.size(), rank=hvd.rank())
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    model = torchvision.models.resnet18(num_classes=10).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.base_lr * hvd.size(), momentum=0.9)
    optimizer = hvd.DistributedOptimizer(
        optimizer, named_parameters=model.named_parameters(),
        compression=hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        total = torch.zeros(1)
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x.to(device)), y.to(device))
            loss.backward()
            optimizer.step()
            total += loss.detach().cpu()
        mean = hvd.allreduce(total / max(len(loader), 1), name="epoch_loss")
        if hvd.rank() == 0:
            print(f"epoch {epoch + 1}/{args.epochs} loss {mean.item():.4f}", flush=True)
    if hvd.rank() == 0 and args.model:
        os.makedirs(args.model, exist_ok=True)
        torch.save(model.state_dict(), os.path.join(args.model, "resnet18.pt"))


if __name__ == "__main__":
    main()
