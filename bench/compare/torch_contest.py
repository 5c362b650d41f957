#!/usr/bin/python3
"""The contest's PyTorch twin: train_gpt's run under a time budget, in PyTorch, same protocol.

It takes the run's whole config from `train_gpt --print_config` (--config_json), so the shapes,
architecture flags (rotary, QK-norm, ReLU^2, biases, tied head), optimizer (AdamW, or Muon on the
blocks' matrices beside AdamW), schedule (cosine or WSD) and batch are train_gpt's own; the model
is torch_gpt.GPT with GPT-2's initialisation. The protocol is train_gpt --time_budget's: only the
training steps' wall clock counts (rank 0's, broadcast each step, decides for all), the learning
rate follows the elapsed fraction of the budget mapped onto lr_decay_iters, and at the end the
loss is taken once over every validation token (the last 10% of the text) in consecutive
windows of block_size. With --world_size 2 it is DistributedDataParallel over gloo, each rank
training on batch_size / 2 sequences of every step.

Prints one JSON line on rank 0: full_val_loss, iterations, tokens_per_s, the seed and the budget.
Needs Debian's python3-torch (run with /usr/bin/python3).
"""
import argparse
import json
import math
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import twin
from torch_gpt import GPT


def newton_schulz(g, steps=5):
    """nn::newton_schulz: the quintic iteration on the wide orientation, from G / (||G||_F + 1e-7)."""
    a, b, c = 3.4445, -4.7750, 2.0315
    tall = g.shape[0] > g.shape[1]
    x = g.T if tall else g
    x = x / (x.norm() + 1e-7)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if tall else x


class Muon(torch.optim.Optimizer):
    """nn::Muon: Nesterov momentum, decoupled decay, the orthogonalised update scaled by sqrt(max(1, rows/cols))."""

    def __init__(self, params, lr, momentum, weight_decay):
        super().__init__(params, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                buf = self.state[p].setdefault("momentum_buffer", torch.zeros_like(p))
                buf.mul_(group["momentum"]).add_(p.grad)
                update = p.grad + group["momentum"] * buf
                p.mul_(1 - group["lr"] * group["weight_decay"])
                p.add_(newton_schulz(update), alpha=-group["lr"] * math.sqrt(max(1.0, p.shape[0] / p.shape[1])))


def optimizers(model, c):
    """AdamW on everything, or Muon on the blocks' 2-D weights and AdamW on the rest (muon_adamw_groups)."""
    wd = c["weight_decay"]
    hidden = [p for n, p in model.named_parameters() if n.startswith("h.") and p.dim() == 2] if c["optimizer"] == "muon" else []
    taken = {id(p) for p in hidden}
    matrices = [p for p in model.parameters() if p.dim() >= 2 and id(p) not in taken]
    vectors = [p for p in model.parameters() if p.dim() < 2]
    adamw = torch.optim.AdamW([{"params": matrices, "weight_decay": wd}, {"params": vectors, "weight_decay": 0.0}],
                              lr=c["lr"], betas=(c["beta1"], c["beta2"]), eps=1e-8)
    return adamw, (Muon(hidden, c["muon_lr"], c["muon_momentum"], wd) if hidden else None)


def full_val_loss(model, val, t, batch):
    """nn::full_split_loss: every validation token predicted once, windows of t (the last one shorter)."""
    windows = [(s, min(t, len(val) - 1 - s)) for s in range(0, len(val) - 1, t)]
    total, count = 0.0, 0
    model.eval()
    with torch.no_grad():
        for i in range(0, len(windows), batch):
            for length in sorted({n for _, n in windows[i:i + batch]}):
                starts = [s for s, n in windows[i:i + batch] if n == length]
                x = torch.stack([val[s:s + length] for s in starts])
                y = torch.stack([val[s + 1:s + 1 + length] for s in starts])
                logits = model(x)
                total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="sum").item()
                count += y.numel()
    return total / count, count


def train(rank, args):
    twin.join(rank, args)
    c = json.loads(args.config_json)
    if c["dropout"] != 0:
        raise SystemExit("torch_contest.py: the contest runs without dropout")
    text = open(args.data, encoding="utf-8").read()
    chars = sorted(set(text))  # ids in the order of the sorted characters, as train_gpt numbers them
    stoi = {ch: i for i, ch in enumerate(chars)}
    ids = torch.tensor([stoi[ch] for ch in text], dtype=torch.long)
    split = len(ids) * 9 // 10
    train_ids, val_ids = ids[:split], ids[split:]
    torch.manual_seed(c["seed"])
    model = GPT(len(chars), c["n_layer"], c["n_head"], c["n_embd"], c["block_size"], c["bias"], c["rotary"],
                c["qk_norm"], c["relu_squared"])
    if c["tie_weights"]:
        model.lm_head.weight = model.wte.weight
    adamw, muon = optimizers(model, c)
    muon_ratio = c["muon_lr"] / c["lr"]
    net = nn.parallel.DistributedDataParallel(model) if args.world_size > 1 else model
    t, rows = c["block_size"], c["batch_size"] // args.world_size
    gen = torch.Generator().manual_seed(c["seed"] + 1 + rank)
    train_seconds, it = 0.0, 0
    while True:
        elapsed = torch.tensor([train_seconds], dtype=torch.float64)
        if args.world_size > 1:
            dist.broadcast(elapsed, 0)  # rank 0's clock decides for all, as train_gpt's
        if elapsed.item() >= args.time_budget:
            break
        start = time.perf_counter()
        lr = twin.lr_at(c, int(elapsed.item() / args.time_budget * c["lr_decay_iters"]))
        offsets = torch.randint(len(train_ids) - t - 1, (rows,), generator=gen)
        x = torch.stack([train_ids[o:o + t] for o in offsets])
        y = torch.stack([train_ids[o + 1:o + 1 + t] for o in offsets])
        loss = F.cross_entropy(net(x).view(-1, len(chars)), y.view(-1))
        adamw.zero_grad(set_to_none=True)
        if muon:
            muon.zero_grad(set_to_none=True)
        loss.backward()
        if c["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), c["grad_clip"])
        for group in adamw.param_groups:
            group["lr"] = lr
        adamw.step()
        if muon:
            for group in muon.param_groups:
                group["lr"] = lr * muon_ratio
            muon.step()
        train_seconds += time.perf_counter() - start
        it += 1
    if rank == 0:
        loss, tokens = full_val_loss(model, val_ids, t, c["batch_size"])
        print(json.dumps({"full_val_loss": loss, "val_tokens": tokens, "iterations": it, "seed": c["seed"],
                          "time_budget_s": args.time_budget, "train_seconds": train_seconds,
                          "tokens_per_s": it * c["batch_size"] * t / train_seconds}), flush=True)
    twin.leave(args)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="the text file (tinyshakespeare.txt)")
    parser.add_argument("--config_json", required=True, help="the line `train_gpt --print_config ...` prints")
    parser.add_argument("--time_budget", type=float, default=300, help="seconds of training steps")
    twin.add_process_flags(parser, port=29621)
    args = parser.parse_args()
    twin.start(train, args)


if __name__ == "__main__":
    main()
