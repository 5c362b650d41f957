#!/usr/bin/env python3
"""The simulator beside real runs on this machine, row by row.

For each case: all_reduce_perf measures the algorithms after --calibrate (argument check off,
RINGGRAD_CHECK=0: the simulator runs the algorithm alone); ringgrad-sim then runs the same
algorithms on a topology made of the measured link; the table shows the measured time, the
simulated one, their ratio and the cost model's closed form. With --runs N every case is
measured N times, the cases taking turns, and each figure is the median over the runs (each run
simulated with its own link), so that one run the machine's other work slowed decides no row.

  shm      2 ranks through shared memory
  tcp      2 ranks over loopback TCP (RINGGRAD_SHM=0)
  cluster  scripts/emulated_cluster.sh: 2 hosts x 2 ranks, 1 Gbit/s between hosts (root only);
           inside a host loopback TCP, between hosts one shaped link per host

The link (--link): `pingpong` takes --calibrate's alpha and beta (half the round trip of 8 B
and of 4 MiB); `step` (the default for shm and tcp) fits alpha and beta by least squares to
ring steps of the sizes the rows' steps send. A 2-rank ring all-reduce of n bytes sends steps
of min(n/2, chunk) bytes (the ring runs on segments of one 128 KiB chunk per rank), so from 64
KiB up every step is 32-128 KiB; a 2-rank ring all_gather of 2m bytes is one such step (and a
local copy of m, taken off at the calibrated copy rate). The two differ where a link's cost is
not one line: loopback TCP sends messages of up to 16 KiB from the caller's thread, polling the
reply, and larger ones through the progress thread (collectives/links/host_link.cc), so the 8 B
round trip prices another protocol than the one these steps take. The cluster's ring crosses
two links, so it keeps the ping-pong figures.

  bench/sim/sim_vs_real.py [--build build] [--cases shm,tcp,cluster] [--algos ring] [-b 64K] [-e 64M]
                           [--link step|pingpong] [--runs 1] [--keep DIR]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHUNK = 128 << 10  # CommOptions' chunk_bytes in host memory: the largest step a ring sends


def parse_bytes(text):
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def calibrated(line):
    """alpha (us), beta (ns/B), gamma (ns/B), and inside a host alpha, beta, from the perf tool's line."""
    nums = [float(x) for x in re.findall(r"alpha ([\d.]+) us, beta ([\d.]+) ns/B", line)[0]]
    gamma = float(re.search(r"gamma ([\d.]+) ns/B", line).group(1))
    local = re.search(r"inside a host alpha ([\d.]+) us, beta ([\d.]+) ns/B", line)
    local = [float(x) for x in local.groups()] if local else nums
    return nums[0], nums[1], gamma, local[0], local[1]


def least_squares(points):
    """alpha, beta of the line t = alpha + m beta nearest (m, t) in squares."""
    n = len(points)
    mean_m = sum(m for m, _ in points) / n
    mean_t = sum(t for _, t in points) / n
    var = sum((m - mean_m) ** 2 for m, _ in points)
    beta = sum((m - mean_m) * (t - mean_t) for m, t in points) / var if var else 0.0
    return mean_t - beta * mean_m, beta


def topology(case, alpha, beta, gamma, alpha_l, beta_l):
    def link(a, b):
        return {"alpha_us": a, "GBps": 1 / b}
    t = {"reduce_GBps": 1 / gamma, "copy_GBps": 2 / gamma}
    if case == "cluster":
        t.update(hosts=2, ranks_per_host=2, nic="host", intra=link(alpha_l, beta_l), inter=link(alpha, beta))
    else:
        t.update(hosts=1, ranks_per_host=2, intra=link(alpha_l, beta_l))
    return t


def perf(args, case, tool, algos, lo, hi, out):
    """Runs a perf tool over [lo, hi] for `case`; its JSON, or None where the case cannot run here."""
    env = dict(os.environ, RINGGRAD_CHECK="0")
    sweep = ["-b", lo, "-e", hi, "-f", "2", "-n", str(args.iters), "-w", "3", "--repeat", str(args.repeat), "--json", out]
    if case == "cluster":
        env.update(ALGOS=algos, PERF_ARGS=" ".join(sweep))
        cmd = [os.path.join(ROOT, "scripts/emulated_cluster.sh"), args.build]
    else:
        if case == "tcp":
            env["RINGGRAD_SHM"] = "0"
        cmd = [os.path.join(args.build, "bin/ringgrad-run"), "--nproc-per-node", "2", os.path.join(args.build, "bin", tool),
               "-a", algos, "--calibrate"] + sweep
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if run.returncode == 0 and "skipped" in run.stdout and not os.path.exists(out):
        return None
    if run.returncode != 0 or not os.path.exists(out):
        sys.exit(f"sim_vs_real: {case}: {' '.join(cmd)} failed:\n{run.stdout}{run.stderr}")
    real = json.load(open(out))
    real["setting"] = " ".join(line for line in run.stdout.splitlines() if line.startswith("# emulated cluster"))
    return real


def one_run(args, case, d):
    """Measures `case` once and simulates it on the link measured with it: (real, link text, {(algo, size): us})."""
    real = perf(args, case, "all_reduce_perf", args.algos, args.b, args.e, os.path.join(d, case + ".json"))
    if real is None:
        return None
    figures = list(calibrated(real["cost_model"]))
    link = "pingpong" if case == "cluster" else args.link
    text = "the ping-pong's figures" if case == "cluster" else f"ping-pong alpha {figures[3]:.2f} us, {1 / figures[4]:.2f} GB/s"
    if link == "step":
        hi = min(parse_bytes(args.e) // 2, CHUNK)
        lo = min(parse_bytes(args.b) // 2, hi // 2)  # two sizes at least: a line needs two points
        steps = perf(args, case, "all_gather_perf", "ring", str(2 * lo), str(2 * hi), os.path.join(d, case + "_steps.json"))
        copy_ns = figures[2] / 2  # the topology's copy rate, 2 / gamma
        points = [(r["size"] / 2, r["out_of_place"]["time_us"] * 1e3 - r["size"] / 2 * copy_ns) for r in steps["rows"]]
        alpha_ns, figures[4] = least_squares(points)
        if figures[4] <= 0:
            sys.exit(f"sim_vs_real: {case}: ring steps of {lo}-{hi} bytes took {[round(t) for _, t in points]} ns: "
                     "no time per byte to fit (was the machine busy?); rerun, or take --link pingpong")
        figures[3] = max(0.0, alpha_ns / 1e3)
        text = f"ring steps {lo >> 10}-{hi >> 10} KiB: alpha {figures[3]:.2f} us, {1 / figures[4]:.2f} GB/s; " + text
    topo = os.path.join(d, case + "_topology.json")
    json.dump(topology(case, *figures), open(topo, "w"))
    sim_json = os.path.join(d, case + "_sim.json")
    subprocess.run([os.path.join(args.build, "bin/ringgrad-sim"), "--topology", topo, "-a", args.algos, "-b", args.b,
                    "-e", args.e, "-f", "2", "--json", sim_json], check=True, capture_output=True)
    return real, text, {(r["algo"], r["size"]): r for r in json.load(open(sim_json))["rows"]}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--cases", default="shm,tcp,cluster")
    p.add_argument("--algos", default="ring")
    p.add_argument("-b", default="64K")
    p.add_argument("-e", default="64M")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--link", choices=["step", "pingpong"], default="step",
                   help="on 2 ranks: a line through ring steps (default) or --calibrate's ping-pong")
    p.add_argument("--runs", type=int, default=1, help="measure every case this many times, taking turns; report medians")
    p.add_argument("--keep", help="a folder to keep every run's JSON in (default: discarded)")
    args = p.parse_args()
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    cases = args.cases.split(",")
    results = {case: [] for case in cases}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            for case in cases:
                d = os.path.join(args.keep or tmp, f"run{i + 1}")
                os.makedirs(d, exist_ok=True)
                results[case].append(one_run(args, case, d))
    for case in cases:
        runs = [r for r in results[case] if r is not None]
        if not runs:
            print(f"# {case}: skipped (the emulated cluster needs root and network namespaces)\n")
            continue
        for real, text, _ in runs:
            print(f"# {case}: {real['cost_model']}; simulated on {text}; {real.get('host_path', '')} {real['setting']}")
        print("| size | algo | measured (us) | simulated (us) | simulated / measured | per run | model (us) |")
        print("|---:|---|---:|---:|---:|---|---:|")
        for row in runs[0][0]["rows"]:
            key = (row["algo"], row["size"])
            pairs = [(next(r["out_of_place"]["time_us"] for r in real["rows"] if (r["algo"], r["size"]) == key), sim[key])
                     for real, _, sim in runs if key in sim]
            if not pairs:
                continue
            m = statistics.median(t for t, _ in pairs)
            s = statistics.median(r["time_us"] for _, r in pairs)
            model = statistics.median(r["model_us"] for _, r in pairs)
            each = " ".join(f"{r['time_us'] / t:.2f}" for t, r in pairs)
            print(f"| {row['size']} | {row['algo']} | {m:.1f} | {s:.1f} | {s / m:.2f} | {each} | {model:.1f} |")
        print()


if __name__ == "__main__":
    main()
