#!/usr/bin/python3
"""torch.distributed.all_reduce over gloo (or --backend ringgrad) on local processes, timed size by size.

The PyTorch rows of scripts/compare.sh's all-reduce tables: float32 sum, in place (the only form
torch has), each size --warmup times untimed and --iters times timed on every rank, the median
taken on rank 0. busbw is nccl-tests' (algbw x 2 (n - 1) / n). --backend ringgrad needs
ringgrad's torch backend on the path (PYTHONPATH=build/python).

Prints one JSON line on rank 0: {"rows": [{"size": bytes, "time_us": ..., "busbw": GB/s}, ...]}.
"""
import argparse
import json
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def sweep(rank, args):
    torch.set_num_threads(1)
    if args.backend == "ringgrad":
        import ringgrad_torch  # noqa: F401  registers the backend
    dist.init_process_group(args.backend, init_method=f"tcp://127.0.0.1:{args.port}", rank=rank, world_size=args.nproc)
    rows = []
    for size in args.sizes:
        buffer = torch.ones(max(1, size // 4), dtype=torch.float32)
        for _ in range(args.warmup):
            dist.all_reduce(buffer)
        times = []
        for _ in range(args.iters):
            start = time.perf_counter()
            dist.all_reduce(buffer)
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        algbw = size / median / 1e9
        rows.append({"size": size, "time_us": median * 1e6, "busbw": algbw * 2 * (args.nproc - 1) / args.nproc})
    if rank == 0:
        print(json.dumps({"rows": rows, "nranks": args.nproc}), flush=True)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--sizes", type=int, nargs="+", required=True, help="message sizes in bytes (multiples of 4)")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--port", type=int, default=29613)
    parser.add_argument("--backend", choices=["gloo", "ringgrad"], default="gloo")
    args = parser.parse_args()
    mp.spawn(sweep, args=(args,), nprocs=args.nproc)


if __name__ == "__main__":
    main()
