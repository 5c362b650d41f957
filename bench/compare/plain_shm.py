#!/usr/bin/env python3
"""The plain shared-memory link beside the fast one: 2-rank all_reduce_perf at a few sizes over
ShmLink (fast), PlainShmLink (RINGGRAD_SHM_LINK=plain) and ShmLink without its streaming stores
(RINGGRAD_SHM_STREAM=0, which tells that trick from the rest), in turn within each round (the
order rotates), then per size each one's median in-place time and the median of the rounds'
ratios to the fast link.
  bench/compare/plain_shm.py [--build build] [--rounds 5] [--sizes 8,64K,16M]"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

CONTENDERS = {
    "fast": {"RINGGRAD_SHM_LINK": "fast"},
    "plain": {"RINGGRAD_SHM_LINK": "plain"},
    "fast, plain stores": {"RINGGRAD_SHM_LINK": "fast", "RINGGRAD_SHM_STREAM": "0"},
}
ITERS = {8: 20000, 64 << 10: 2000, 16 << 20: 20}  # timed calls per size (-n); others get 100


def parse_size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s)


def in_place_us(build, env, size):
    """The in-place time of one all_reduce_perf row (the slowest rank's mean), in us."""
    n = ITERS.get(size, 100)
    with tempfile.TemporaryDirectory() as d:
        cmd = [f"{build}/bin/ringgrad-run", "--nproc-per-node", "2", f"{build}/bin/all_reduce_perf",
               "-b", str(size), "-e", str(size), "-n", str(n), "-w", str(max(5, n // 20)), "--warmup_ms", "20",
               "--json", f"{d}/row.json"]
        subprocess.run(cmd, env=dict(os.environ, **env), capture_output=True, check=True, timeout=600)
        with open(f"{d}/row.json") as f:
            return json.load(f)["rows"][0]["in_place"]["time_us"]


def us(t):
    return f"{t:.3g}" if t < 100 else f"{t:.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", default="8,64K,16M")
    a = ap.parse_args()
    labels = a.sizes.split(",")
    sizes = [parse_size(s) for s in labels]
    names = list(CONTENDERS)
    times = {(name, s): [] for name in names for s in sizes}
    for r in range(a.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for s in sizes:
            for name in order:
                times[name, s].append(in_place_us(a.build, CONTENDERS[name], s))
        print(f"round {r + 1}: " + "; ".join(f"{label} B " + ", ".join(f"{n} {us(times[n, s][-1])}" for n in names)
                                             for label, s in zip(labels, sizes)), flush=True)
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = re.search(r"Model name:\s*(.*)", cpu).group(1)
    isa = "AVX-512" if "avx512f" in cpu else "AVX2" if "avx2" in cpu else "no AVX2"
    print(f"\n{model}, {os.cpu_count()} CPUs, {isa}; {a.rounds} rounds, in place, us: medians (min-max), "
          "and the median of the rounds' ratios to the fast link\n")
    print("| size | " + " | ".join(names) + " |\n|---|" + "---:|" * len(names))
    for label, s in zip(labels, sizes):
        cells = []
        for name in names:
            t, f = times[name, s], times["fast", s]
            ratio = "" if name == "fast" else f", {statistics.median(x / y for x, y in zip(t, f)):.2f}x"
            cells.append(f"{us(statistics.median(t))} ({us(min(t))}-{us(max(t))}){ratio}")
        print(f"| {label} B | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
