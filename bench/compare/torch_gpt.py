#!/usr/bin/python3
"""train_gpt's GPT in PyTorch, timed step by step: the baby recipe by default, or any run's whole
config from `train_gpt --print_config` (--config_json), on the CPU or a GPU; its GPT class also
carries train_gpt's architecture flags for the contest twin (torch_contest.py).

The same shapes and recipe as train_gpt: pre-LayerNorm blocks, tanh GELU, biases and a tied
head as the config says, dropout on the embeddings and after each block's attention and MLP;
AdamW with weight decay on 2-D weights only, the gradient norm clipped, warmup then cosine; on
random windows of a text file with characters as tokens. The baby recipe (the default) is what
scripts/compare.sh runs beside train_gpt; with --world_size 2 it is DistributedDataParallel over
gloo on local processes, --batch_size sequences on each. With --config_json from
`train_gpt --config shakespeare-char --print_config` it is nanoGPT's shakespeare-char run, which
scripts/gpu_check.sh runs on a GPU with --device cuda --dtype bf16 (autocast to bfloat16, as
nanoGPT trains there). --attention sdpa uses F.scaled_dot_product_attention (FlashAttention on a
GPU, what nanoGPT runs) instead of the scores train_gpt materialises.

Prints one JSON line on rank 0: the median step in ms, tokens per second by it, the iterations
run and, with --eval_iters, the train and val loss at the end. On the CPU it needs Debian's
python3-torch (run with /usr/bin/python3); set OPENBLAS_NUM_THREADS to --threads before it
starts, as compare.py does, so OpenBLAS keeps to the same threads.
"""
import argparse
import contextlib
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import twin

# train_gpt --config baby --print_config, the fields this script reads.
BABY = {"n_layer": 4, "n_head": 4, "n_embd": 128, "block_size": 64, "dropout": 0.0, "bias": True, "tie_weights": False,
        "rotary": False, "qk_norm": False, "relu_squared": False, "batch_size": 12, "lr": 1e-3, "min_lr": 1e-4,
        "warmup_iters": 100, "lr_decay_iters": 2000, "lr_schedule": "cosine", "cooldown_frac": 0.4, "beta1": 0.9,
        "beta2": 0.99, "weight_decay": 0.1, "grad_clip": 1.0, "seed": 1337, "optimizer": "adamw"}


class Block(nn.Module):
    def __init__(self, channels, heads, bias=True, rotary=False, qk_norm=False, relu_squared=False, dropout=0.0,
                 attention="matmul"):
        super().__init__()
        self.heads, self.rotary, self.qk_norm, self.relu_squared = heads, rotary, qk_norm, relu_squared
        self.dropout, self.attention = dropout, attention
        self.ln_1 = layer_norm(channels, bias)
        self.qkv = nn.Linear(channels, 3 * channels, bias=bias)
        self.proj = nn.Linear(channels, channels, bias=bias)
        self.ln_2 = layer_norm(channels, bias)
        self.fc = nn.Linear(channels, 4 * channels, bias=bias)
        self.fc_proj = nn.Linear(4 * channels, channels, bias=bias)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        if self.qk_norm:  # unit root-mean-square per head (tensor/qk_norm.h)
            q, k = (z * torch.rsqrt(z.square().mean(-1, keepdim=True) + 1e-6) for z in (q, k))
        if self.rotary:
            q, k = rotate(q), rotate(k)
        if self.attention == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # the [B, H, T, T] scores materialised, as train_gpt computes them
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
            causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
            y = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1) @ v
        drop = lambda z: F.dropout(z, self.dropout, self.training) if self.dropout else z
        x = x + drop(self.proj(y.transpose(1, 2).reshape(b, t, c)))
        h = self.fc(self.ln_2(x))
        h = F.relu(h).square() if self.relu_squared else F.gelu(h, approximate="tanh")
        return x + drop(self.fc_proj(h))


class LayerNormNoBias(nn.Module):
    """LayerNorm with a weight and no bias (PyTorch 1.13's nn.LayerNorm has both or neither)."""

    def __init__(self, channels):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, None, 1e-5)


def layer_norm(channels, bias):
    return nn.LayerNorm(channels) if bias else LayerNormNoBias(channels)


def rotate(x, base=10000.0):
    """Rotary embeddings on [B, H, T, d], pairs (i, i + d/2) turned by t base^(-2i/d) (tensor/rotary.h)."""
    t, d = x.shape[-2], x.shape[-1]
    angle = torch.arange(t, dtype=torch.float64)[:, None] * base ** (-2.0 * torch.arange(d // 2, dtype=torch.float64) / d)
    cos, sin = angle.cos().to(x.device, x.dtype), angle.sin().to(x.device, x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class GPT(nn.Module):
    """ringgrad's nn::GPT: the same modules, options and GPT-2 initialisation (N(0, 0.02), the
    residual projections scaled by 1/sqrt(2 layers), biases zero)."""

    def __init__(self, vocab, layers=4, heads=4, channels=128, block_size=64, bias=True, rotary=False, qk_norm=False,
                 relu_squared=False, dropout=0.0, attention="matmul"):
        super().__init__()
        self.dropout = dropout
        self.wte = nn.Embedding(vocab, channels)
        self.wpe = None if rotary else nn.Embedding(block_size, channels)
        self.h = nn.ModuleList(Block(channels, heads, bias, rotary, qk_norm, relu_squared, dropout, attention)
                               for _ in range(layers))
        self.ln_f = layer_norm(channels, bias)
        self.lm_head = nn.Linear(channels, vocab, bias=False)
        for name, p in self.named_parameters():
            if "ln_" in name:
                continue
            if name.endswith(".bias"):
                nn.init.zeros_(p)
            else:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("proj.weight") else 0.02  # proj, fc_proj
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx):
        x = self.wte(idx)
        if self.wpe is not None:
            x = x + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        if self.dropout:
            x = F.dropout(x, self.dropout, self.training)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def batches(ids, rows, t, gen, device):
    """Random windows of t tokens and their next tokens, as train_gpt's get_batch draws them."""
    offsets = torch.randint(len(ids) - t - 1, (rows,), generator=gen).to(device)
    window = offsets[:, None] + torch.arange(t, device=device)
    return ids[window], ids[window + 1]


@torch.no_grad()
def estimate_loss(model, ids, rows, t, iters, gen, device, autocast):
    """nn::estimate_loss: the mean loss over `iters` random batches, dropout off."""
    model.eval()
    losses = []
    for _ in range(iters):
        x, y = batches(ids, rows, t, gen, device)
        with autocast():
            losses.append(F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item())
    model.train()
    return sum(losses) / len(losses)


def train(rank, args):
    twin.join(rank, args)
    c = {**BABY, **(json.loads(args.config_json) if args.config_json else {})}
    if c["optimizer"] != "adamw":
        raise SystemExit("torch_gpt.py: AdamW only (torch_contest.py has Muon)")
    device = torch.device(args.device)
    seed = c["seed"] if args.seed is None else args.seed
    rows = args.batch_size or c["batch_size"] // args.world_size
    t = c["block_size"]
    text = open(args.data, encoding="utf-8").read()
    chars = sorted(set(text))  # ids in the order of the sorted characters, as train_gpt numbers them
    stoi = {ch: i for i, ch in enumerate(chars)}
    ids = torch.tensor([stoi[ch] for ch in text], dtype=torch.long, device=device)
    train_ids, val_ids = ids[: len(ids) * 9 // 10], ids[len(ids) * 9 // 10:]
    torch.manual_seed(seed)
    model = GPT(len(chars), c["n_layer"], c["n_head"], c["n_embd"], t, c["bias"], c["rotary"], c["qk_norm"],
                c["relu_squared"], c["dropout"], args.attention)
    if c["tie_weights"]:
        model.lm_head.weight = model.wte.weight
    model.to(device)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": c["weight_decay"]},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=c["lr"], betas=(c["beta1"], c["beta2"]), eps=1e-8)
    net = nn.parallel.DistributedDataParallel(model) if args.world_size > 1 else model
    step = torch.compile(net) if args.compile else net
    autocast = lambda: (torch.autocast(device.type, dtype=torch.bfloat16) if args.dtype == "bf16"
                        else contextlib.nullcontext())
    gen = torch.Generator().manual_seed(seed + 1 + rank)
    times, train_seconds, it, last_loss = [], 0.0, 0, float("nan")
    while it < args.warmup_steps + args.steps and not (args.time_budget and train_seconds >= args.time_budget):
        start = time.perf_counter()
        x, y = batches(train_ids, rows, t, gen, device)
        for group in optimizer.param_groups:
            group["lr"] = twin.lr_at(c, it)
        with autocast():
            loss = F.cross_entropy(step(x).flatten(0, 1), y.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if c["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), c["grad_clip"])
        optimizer.step()
        last_loss = loss.item()  # waits for the GPU each step, as train_gpt does
        seconds = time.perf_counter() - start
        train_seconds += seconds
        if it >= args.warmup_steps:
            times.append(seconds)
        if args.log_interval and it % args.log_interval == 0 and rank == 0:
            print(f"iter {it:5d}: loss {last_loss:.4f}, {seconds * 1e3:.1f} ms/iter", flush=True)
        it += 1
    median = statistics.median(times) if times else float("nan")
    result = {"ms_per_step_median": median * 1e3, "world_size": args.world_size, "batch_per_rank": rows,
              "tokens_per_s": args.world_size * rows * t / median, "last_loss": last_loss, "iterations": it,
              "train_seconds": train_seconds, "device": str(device), "dtype": args.dtype, "attention": args.attention,
              "compile": args.compile, "torch": torch.__version__}
    if args.eval_iters and rank == 0:
        eval_gen = torch.Generator().manual_seed(4343)
        result["train_loss"] = estimate_loss(model, train_ids, rows, t, args.eval_iters, eval_gen, device, autocast)
        result["val_loss"] = estimate_loss(model, val_ids, rows, t, args.eval_iters, eval_gen, device, autocast)
    if device.type == "cuda":
        result["peak_gpu_mib"] = torch.cuda.max_memory_allocated(device) / 2**20
    if rank == 0:
        print(json.dumps(result), flush=True)
    twin.leave(args)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="the text file (tinyshakespeare.txt)")
    parser.add_argument("--config_json",
                        help="the line `train_gpt --print_config ...` prints (default: the baby recipe)")
    parser.add_argument("--batch_size", type=int,
                        help="sequences per rank and step (default: the config's over the ranks)")
    parser.add_argument("--steps", type=int, default=40, help="timed steps")
    parser.add_argument("--warmup_steps", type=int, default=5, help="untimed steps first")
    parser.add_argument("--time_budget", type=float, default=0,
                        help="stop once the steps took this many seconds (0: no limit)")
    parser.add_argument("--eval_iters", type=int, default=0, help="batches per loss estimate at the end (0: none)")
    parser.add_argument("--log_interval", type=int, default=0, help="iterations between progress lines (0: none)")
    parser.add_argument("--seed", type=int, help="seed of the weights and batches (default: the config's)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"], help="bf16: autocast to bfloat16")
    parser.add_argument("--attention", default="matmul", choices=["matmul", "sdpa"],
                        help="matmul: the scores materialised, as train_gpt; sdpa: F.scaled_dot_product_attention")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model (PyTorch 2)")
    twin.add_process_flags(parser, port=29611)
    args = parser.parse_args()
    if args.attention == "sdpa" and not hasattr(F, "scaled_dot_product_attention"):
        parser.error(f"--attention sdpa needs PyTorch 2 (this is {torch.__version__})")
    if args.compile and not hasattr(torch, "compile"):
        parser.error(f"--compile needs PyTorch 2 (this is {torch.__version__})")
    twin.start(train, args)


if __name__ == "__main__":
    main()
