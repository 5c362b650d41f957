"""What the PyTorch twins share: the flags of a run on local processes, joining its process group
(over gloo, or over ringgrad through its torch backend: --backend ringgrad, with
PYTHONPATH=build/python), and starting it (one process, or --world_size of them with
torch.multiprocessing); and train_gpt's learning-rate schedule."""
import math

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def add_process_flags(parser, port):
    parser.add_argument("--world_size", type=int, default=1, help="local processes (DDP when > 1)")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads per process")
    parser.add_argument("--port", type=int, default=port, help="torch's rendezvous port on 127.0.0.1")
    parser.add_argument("--backend", choices=["gloo", "ringgrad"], default="gloo",
                        help="torch.distributed backend (ringgrad: its module ringgrad_torch on PYTHONPATH)")


def join(rank, args):
    """In each process first: its threads, and with several processes the process group."""
    torch.set_num_threads(args.threads)
    if args.world_size > 1:
        if args.backend == "ringgrad":
            import ringgrad_torch  # noqa: F401  registers the backend
        dist.init_process_group(args.backend, init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                                world_size=args.world_size)


def leave(args):
    if args.world_size > 1:
        dist.destroy_process_group()


def start(train, args):
    """train(rank, args) on one process, or on --world_size spawned ones."""
    if args.world_size == 1:
        train(0, args)
    else:
        mp.spawn(train, args=(args,), nprocs=args.world_size)


def lr_at(c, it):
    """TrainConfig::lr_at for train_gpt's config `c`: warmup, then the cosine or the WSD trapezoid, then min_lr."""
    peak, floor, warmup, decay = c["lr"], c["min_lr"], c["warmup_iters"], c["lr_decay_iters"]
    if it < warmup:
        return peak * (it + 1) / warmup
    if it >= decay:
        return floor
    if c["lr_schedule"] == "wsd":
        start = (1 - c["cooldown_frac"]) * decay
        return peak if it <= start else peak + (floor - peak) * (it - start) / (decay - start)
    r = (it - warmup) / max(1, decay - warmup)
    return floor + 0.5 * (1 + math.cos(math.pi * r)) * (peak - floor)
