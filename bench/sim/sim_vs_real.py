#!/usr/bin/env python3
"""The simulator beside real runs on this machine, row by row.

For each case: all_reduce_perf measures the algorithms after --calibrate (argument check off,
RINGGRAD_CHECK=0: the simulator runs the algorithm alone); ringgrad-sim then runs the same
algorithms on a topology made of the calibrated alpha, beta and gamma; the table shows the
measured time, the simulated one, their ratio and the cost model's closed form.

  shm      2 ranks through shared memory
  tcp      2 ranks over loopback TCP (RINGGRAD_SHM=0)
  cluster  scripts/emulated_cluster.sh: 2 hosts x 2 ranks, 1 Gbit/s between hosts (root only);
           inside a host loopback TCP, between hosts one shaped link per host

  bench/sim/sim_vs_real.py [--build build] [--cases shm,tcp,cluster] [--algos ring] [-b 64K] [-e 64M]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def calibrated(line):
    """alpha (us), beta (ns/B), gamma (ns/B), and inside a host alpha, beta, from the perf tool's line."""
    nums = [float(x) for x in re.findall(r"alpha ([\d.]+) us, beta ([\d.]+) ns/B", line)[0]]
    gamma = float(re.search(r"gamma ([\d.]+) ns/B", line).group(1))
    local = re.search(r"inside a host alpha ([\d.]+) us, beta ([\d.]+) ns/B", line)
    local = [float(x) for x in local.groups()] if local else nums
    return nums[0], nums[1], gamma, local[0], local[1]


def topology(case, alpha, beta, gamma, alpha_l, beta_l):
    def link(a, b):
        return {"alpha_us": a, "GBps": 1 / b}
    t = {"reduce_GBps": 1 / gamma, "copy_GBps": 2 / gamma}
    if case == "cluster":
        t.update(hosts=2, ranks_per_host=2, nic="host", intra=link(alpha_l, beta_l), inter=link(alpha, beta))
    else:
        t.update(hosts=1, ranks_per_host=2, intra=link(alpha_l, beta_l))
    return t


def measure(args, case, out):
    env = dict(os.environ, RINGGRAD_CHECK="0")
    sweep = ["-b", args.b, "-e", args.e, "-f", "2", "-n", str(args.iters), "-w", "3", "--repeat", str(args.repeat), "--json", out]
    if case == "cluster":
        env.update(ALGOS=args.algos, PERF_ARGS=" ".join(sweep))
        cmd = [os.path.join(ROOT, "scripts/emulated_cluster.sh"), args.build]
    else:
        if case == "tcp":
            env["RINGGRAD_SHM"] = "0"
        cmd = [os.path.join(args.build, "bin/ringgrad-run"), "--nproc-per-node", "2", os.path.join(args.build, "bin/all_reduce_perf"),
               "-a", args.algos, "--calibrate"] + sweep
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if run.returncode == 0 and "skipped" in run.stdout and not os.path.exists(out):
        return None
    if run.returncode != 0 or not os.path.exists(out):
        sys.exit(f"sim_vs_real: {case}: {' '.join(cmd)} failed:\n{run.stdout}{run.stderr}")
    real = json.load(open(out))
    real["setting"] = " ".join(line for line in run.stdout.splitlines() if line.startswith("# emulated cluster"))
    return real


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--cases", default="shm,tcp,cluster")
    p.add_argument("--algos", default="ring")
    p.add_argument("-b", default="64K")
    p.add_argument("-e", default="64M")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for case in args.cases.split(","):
            real = measure(args, case, os.path.join(d, case + ".json"))
            if real is None:
                print(f"# {case}: skipped (the emulated cluster needs root and network namespaces)\n")
                continue
            figures = calibrated(real["cost_model"])
            topo = os.path.join(d, case + "_topology.json")
            json.dump(topology(case, *figures), open(topo, "w"))
            sim_json = os.path.join(d, case + "_sim.json")
            subprocess.run([os.path.join(args.build, "bin/ringgrad-sim"), "--topology", topo, "-a", args.algos, "-b", args.b,
                            "-e", args.e, "-f", "2", "--json", sim_json], check=True, capture_output=True)
            sim = {(r["algo"], r["size"]): r for r in json.load(open(sim_json))["rows"]}
            print(f"# {case}: {real['cost_model']}; {real.get('host_path', '')} {real['setting']}")
            print("| size | algo | measured (us) | simulated (us) | simulated / measured | model (us) |")
            print("|---:|---|---:|---:|---:|---:|")
            for row in real["rows"]:
                s = sim.get((row["algo"], row["size"]))
                m = row["out_of_place"]["time_us"]
                if s is None:
                    continue
                print(f"| {row['size']} | {row['algo']} | {m:.1f} | {s['time_us']:.1f} | {s['time_us'] / m:.2f} | "
                      f"{s['model_us']:.1f} |")
            print()


if __name__ == "__main__":
    main()
