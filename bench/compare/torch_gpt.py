#!/usr/bin/python3
"""ringgrad's baby GPT (train_gpt --config baby) in PyTorch, timed step by step; its GPT class
also carries train_gpt's architecture flags for the contest twin (torch_contest.py).

The twin scripts/compare.sh runs beside train_gpt: the same shapes and recipe (4 pre-LayerNorm
blocks, 4 heads, C 128, T 64, biases, tanh GELU, an untied head, no dropout; AdamW with betas
0.9 and 0.99, weight decay 0.1 on 2-D weights only, gradient norm clipped to 1.0, warmup then
cosine), on random windows of a text file with characters as tokens. With --world_size 2 it is
DistributedDataParallel over gloo on local processes, --batch_size sequences on each.

Prints one JSON line on rank 0: the median step in ms and the global tokens per second.
Needs Debian's python3-torch (run with /usr/bin/python3); set OPENBLAS_NUM_THREADS to --threads
before it starts, as compare.py does, so OpenBLAS keeps to the same threads.
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import twin


class Block(nn.Module):
    def __init__(self, channels, heads, bias=True, rotary=False, qk_norm=False, relu_squared=False):
        super().__init__()
        self.heads, self.rotary, self.qk_norm, self.relu_squared = heads, rotary, qk_norm, relu_squared
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
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        y = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        h = self.fc(self.ln_2(x))
        h = F.relu(h).square() if self.relu_squared else F.gelu(h, approximate="tanh")
        return x + self.fc_proj(h)


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
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class GPT(nn.Module):
    """ringgrad's nn::GPT: the same modules, options and GPT-2 initialisation (N(0, 0.02), the
    residual projections scaled by 1/sqrt(2 layers), biases zero)."""

    def __init__(self, vocab, layers=4, heads=4, channels=128, block_size=64, bias=True, rotary=False, qk_norm=False,
                 relu_squared=False):
        super().__init__()
        self.wte = nn.Embedding(vocab, channels)
        self.wpe = None if rotary else nn.Embedding(block_size, channels)
        self.h = nn.ModuleList(Block(channels, heads, bias, rotary, qk_norm, relu_squared) for _ in range(layers))
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
            x = x + self.wpe(torch.arange(idx.shape[1]))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def lr_at(it, peak=1e-3, floor=1e-4, warmup=100, decay=2000):
    if it < warmup:
        return peak * (it + 1) / warmup
    r = min(1.0, (it - warmup) / (decay - warmup))
    return floor + (peak - floor) * 0.5 * (1 + math.cos(math.pi * r))


def train(rank, args):
    twin.join(rank, args)
    text = open(args.data, encoding="utf-8").read()
    chars = sorted(set(text))  # ids in the order of the sorted characters, as train_gpt numbers them
    stoi = {ch: i for i, ch in enumerate(chars)}
    data = torch.tensor([stoi[ch] for ch in text[: len(text) * 9 // 10]], dtype=torch.long)
    torch.manual_seed(args.seed)
    model = GPT(len(chars))
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=1e-3, betas=(0.9, 0.99))
    if args.world_size > 1:
        model = nn.parallel.DistributedDataParallel(model)
    gen = torch.Generator().manual_seed(args.seed + 1 + rank)
    t = 64
    times = []
    for it in range(args.warmup_steps + args.steps):
        start = time.perf_counter()
        offsets = torch.randint(len(data) - t - 1, (args.batch_size,), generator=gen)
        x = torch.stack([data[o:o + t] for o in offsets])
        y = torch.stack([data[o + 1:o + 1 + t] for o in offsets])
        for group in optimizer.param_groups:
            group["lr"] = lr_at(it)
        loss = F.cross_entropy(model(x).view(-1, len(chars)), y.view(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if it >= args.warmup_steps:
            times.append(time.perf_counter() - start)
    median = statistics.median(times)
    if rank == 0:
        print(json.dumps({"ms_per_step_median": median * 1e3, "world_size": args.world_size,
                          "batch_per_rank": args.batch_size,
                          "tokens_per_s": args.world_size * args.batch_size * t / median, "last_loss": loss.item()}),
              flush=True)
    twin.leave(args)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="the text file (tinyshakespeare.txt)")
    parser.add_argument("--batch_size", type=int, default=12, help="sequences per rank and step")
    parser.add_argument("--steps", type=int, default=40, help="timed steps")
    parser.add_argument("--warmup_steps", type=int, default=5, help="untimed steps first")
    parser.add_argument("--seed", type=int, default=1337)
    twin.add_process_flags(parser, port=29611)
    args = parser.parse_args()
    twin.start(train, args)


if __name__ == "__main__":
    main()
