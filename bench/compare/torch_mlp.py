#!/usr/bin/python3
"""ringgrad's train_mlp in PyTorch: a 784-256-10 MLP on Fashion-MNIST, timed over one epoch.

The twin scripts/compare.sh runs beside train_mlp: the same data (the Debian package's gzipped
IDX files, pixels scaled to [0, 1] and normalised by the training set's mean and standard
deviation), model (Linear, ReLU, Linear), SGD with momentum 0.9 under a cosine learning rate
from 0.02, and global batch (64: 32 on each of 2 ranks). With --world_size 2 it is
DistributedDataParallel over gloo on local processes, each rank reading its share of a shuffled
order, as DistributedSampler gives it.

Prints one JSON line on rank 0: training samples per second over the epochs (all ranks) and
the test accuracy. Set OPENBLAS_NUM_THREADS to --threads before it starts.
"""
import argparse
import gzip
import json
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import twin

MEAN, STD = 0.2860, 0.3530  # of the training images, scaled to [0, 1]


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(folder, split):
    images = read_idx(f"{folder}/{split}-images-idx3-ubyte.gz").reshape(-1, 784).astype(np.float32)
    labels = read_idx(f"{folder}/{split}-labels-idx1-ubyte.gz").astype(np.int64)
    return torch.from_numpy((images / 255.0 - MEAN) / STD), torch.from_numpy(labels)


def train(rank, args):
    twin.join(rank, args)
    world = args.world_size
    x_train, y_train = load(args.data, "train")
    x_test, y_test = load(args.data, "t10k")
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(784, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 10))
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    per_rank = args.batch_size // world
    steps_per_epoch = math.ceil(len(x_train) / world / per_rank)
    step, seconds = 0, 0.0
    for epoch in range(args.epochs):
        order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(args.seed + epoch))
        mine = order[rank::world]
        start = time.perf_counter()
        for b in range(0, len(mine), per_rank):
            rows = mine[b:b + per_rank]
            for group in optimizer.param_groups:
                group["lr"] = args.lr * 0.5 * (1 + math.cos(math.pi * step / (steps_per_epoch * args.epochs)))
            loss = F.cross_entropy(model(x_train[rows]), y_train[rows])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
        seconds += time.perf_counter() - start
    with torch.no_grad():
        accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
    if rank == 0:
        print(json.dumps({"samples_per_s": args.epochs * len(x_train) / seconds, "world_size": world,
                          "batch_global": args.batch_size, "test_accuracy": accuracy}), flush=True)
    twin.leave(args)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist", help="folder of the .gz files")
    parser.add_argument("--batch_size", type=int, default=64, help="global batch: samples per step over all ranks")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    twin.add_process_flags(parser, port=29612)
    args = parser.parse_args()
    twin.start(train, args)


if __name__ == "__main__":
    main()
