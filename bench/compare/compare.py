#!/usr/bin/python3
"""scripts/compare.sh's driver: ringgrad and each peer on the same work, in interleaved rounds.

Each round runs every job of the chosen sections once, one after another, so a noisy neighbour
slows every contender alike; the table gives each figure's median over the rounds with its
range, and the median of the rounds' ratios, oriented so that above 1 means ringgrad is faster. A peer
that cannot run (not installed, or its run fails) stops the command with its name: no row is
ever left blank.

  compare.py [all|all_reduce|collectives|gpt|ddp|mlp|latency|contest|torch ...] [--rounds 3] [--build build]
             [--data tinyshakespeare.txt] [--out bench/results] [--python /usr/bin/python3]
             [--mpirun mpirun] [--budget 300] [--isa native|avx2] [--check-only]

Sections: all_reduce (ringgrad over shared memory and TCP beside Open MPI over both, libgloo's
ring_chunked and halving_doubling, PyTorch's gloo backend; 2 ranks, float32 sum, in place),
collectives (all_gather, reduce_scatter, broadcast, all_to_all beside Open MPI), gpt (the baby
GPT step, one process, one thread, beside its PyTorch twin and beside its GEMM shapes alone by
OpenBLAS, gemm_libraries: ringgrad's ratio to those is the step's GFLOP/s as a share of the GEMMs'), ddp (the baby GPT on 2 ranks x 12
sequences beside PyTorch DDP and beside two one-process runs of 12 sequences at once, the ceiling
of DDP on these cores: ringgrad's ratio to it is the share of that ceiling DDP reaches), mlp
(train_mlp's epoch, one process and 2 ranks, beside PyTorch).
latency (not part of all) times small all-reduces, 8 B to 64 KiB, 10,000 calls a size: ringgrad over
shared memory in place, out of place and with its argument check off (RINGGRAD_CHECK=0), beside
Open MPI over shared memory, and both over TCP; written to <out>/latency.json.
contest (not part of all: 4 runs of --budget seconds a round) is the fixed-time contest of
docs/speedrun.md on 2 ranks: the speedrun preset and the baby recipe (global batch 24), each by
train_gpt and by its PyTorch twin (torch_contest.py, given the run's `train_gpt --print_config`),
round r with seed r; the whole-split validation loss, lower is better.
torch (not part of all) is PyTorch on ringgrad through its torch backend (collectives/torch,
`--backend ringgrad` of the twins, with PYTHONPATH=<build>/python) beside PyTorch on gloo:
torch.distributed.all_reduce 8 B to 64 MiB on 2 ranks, and DDP of the baby GPT twin and of the
MLP twin on 2 ranks.
--isa avx2 runs everything as on an AVX2-only x86 machine, on one that has AVX-512: OpenBLAS's
Haswell kernels for both frameworks (OPENBLAS_CORETYPE=Haswell), oneDNN capped at AVX2
(DNNL_MAX_CPU_ISA=AVX2, so ringgrad gives it the products its AVX2 kernels run faster, as it
would there: tensor/onednn.h) and PyTorch's AVX2 kernels (ATEN_CPU_CAPABILITY=avx2). ringgrad's own loops run
their AVX2 builds anyway, except GELU, whose AVX-512 build GCC's resolver still picks
(docs/transformer.md measures what that is worth).
Writes <out>/compare.json (every measurement), compare_all_reduce.svg and compare_training.svg.
"""
import argparse
import ctypes.util
import json
import os
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import compare_plots

HERE = Path(__file__).resolve().parent
SECTIONS = ["all_reduce", "collectives", "gpt", "ddp", "mlp"]  # what "all" runs
EXTRA = ["latency", "contest", "torch"]  # sections run only when named
TORCH_SIZES = [8 * 8 ** i for i in range(8)] + [64 << 20]  # the torch section's all_reduce: 8 B to 64 MiB
TORCH_CEILING = "PyTorch, 2 processes alone"  # the torch section's DDP ceiling
CEILING = "2 processes alone"  # the ddp section's no-communication ceiling
# Every perf tool warms up for this long (ms) before each row, after its counted warm-up: a CPU
# that sat idle runs slowly for its first milliseconds, whoever runs on it (perf_driver.cc).
WARMUP_MS = "20"
OUT_OF_PLACE, NO_CHECK = "ringgrad shm out-of-place", "ringgrad shm, no argument check"  # the latency section's
GEMMS = "its GEMMs alone"  # the gpt section's ceiling: the step's GEMM shapes by OpenBLAS, nothing else
CONTEST_RECIPES = {"speedrun": ["--config", "speedrun"], "baby": ["--config", "baby", "--batch_size", "24"]}


class PeerFailed(Exception):
    pass


def machine():
    """CPU model, ISA, cores and load average: the line every figure is labelled with."""
    model, flags = "unknown CPU", set()
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name") and model == "unknown CPU":
            model = line.split(":", 1)[1].strip()
        if line.startswith("flags") and not flags:
            flags = set(line.split(":", 1)[1].split())
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE only"
    return {"cpu": model, "isa": isa, "cores": os.cpu_count(), "load": open("/proc/loadavg").read().split()[:3]}


def free_port():
    """A port no socket holds now, as the kernel picks one for a bind to port 0 (a random port
    could be one that a connection of the job before still holds: "Address already in use")."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Job:
    """One command of a round and what it measured: {peer: {key: value}}, keys like ("time_us", 8)."""

    def __init__(self, section, peers, command, parse, env=None, needs=()):
        self.section, self.peers, self.command, self.parse = section, peers, command, parse
        # The program run under its launcher (ringgrad-run, mpirun) or interpreter, for progress lines.
        names = [Path(str(c)).name for c in command]
        program = next((n for n in names if n.endswith(("_perf", ".py")) or n.startswith("train_")), names[0])
        self.label = f"{section}: {', '.join(peers)} ({program})"
        self.env = env or {}
        self.needs = needs  # (what, path) pairs that must exist before anything runs

    def run(self, json_path, round_number, build):
        port = str(free_port())
        command = [str(c).replace("{json}", json_path).replace("{port}", port).replace("{round}", str(round_number))
                   for c in self.command]
        # {config:FLAGS}: the whole config train_gpt would run with FLAGS, for a twin to train the same run.
        command = [printed_config(build, c[len("{config:"):-1].split() + ["--seed", str(round_number)])
                   if c.startswith("{config:") else c for c in command]
        done = subprocess.run(command, env={**os.environ, **self.env}, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise PeerFailed(f"{' and '.join(self.peers)}: `{' '.join(command)}` exited {done.returncode}:\n"
                             + (done.stdout + done.stderr)[-1500:])
        try:
            got = self.parse(done.stdout, json_path)
        except (ValueError, KeyError, IndexError, json.JSONDecodeError) as e:
            raise PeerFailed(f"{' and '.join(self.peers)}: no result in the output of `{' '.join(command)}` ({e}):\n"
                             + done.stdout[-1500:])
        for peer in self.peers:
            if not got.get(peer):
                raise PeerFailed(f"{peer}: `{' '.join(command)}` ran but measured nothing")
        return got


# --- Parsers: each turns one run's output into {peer: {key: value}} -------------------------

def perf_rows(path, peer_of_algo, place="in_place"):
    rows = {}
    for row in json.load(open(path))["rows"]:
        peer = peer_of_algo(row["algo"])
        if peer:
            rows.setdefault(peer, {})[(row["collective"], row["size"])] = row[place]["time_us"]
            rows[peer][(row["collective"] + " busbw", row["size"])] = row[place]["busbw"]
    return rows


def last_json_line(stdout):
    return json.loads([line for line in stdout.splitlines() if line.startswith("{")][-1])


def number_after(stdout, text):
    line = [line for line in stdout.splitlines() if text in line][-1]
    return float(line.split(text)[0].split()[-1].strip("(:"))


def last_number_on(stdout, start):
    """The last number of the last line that begins with `start`."""
    return float([line for line in stdout.splitlines() if line.startswith(start)][-1].split()[-1])


def jobs_for(sections, args, sizes):
    b = Path(args.build) / "bin"
    run2 = [b / "ringgrad-run", "--nproc-per-node", "2"]
    mpirun = [args.mpirun, "--oversubscribe", "-np", "2", "-x", "MASTER_ADDR=127.0.0.1", "-x", "MASTER_PORT={port}"]
    sweep = ["-b", str(sizes[0]), "-e", str(sizes[-1]), "-f", "8", "-n", "50", "-w", "5", "--warmup_ms", WARMUP_MS, "--json", "{json}"]
    python = args.python
    torch = [("PyTorch (python3-torch)", python)]
    jobs = []
    if "all_reduce" in sections:
        ours = lambda peer: lambda _, path: perf_rows(path, lambda a: peer if a.startswith("auto") else None)
        mpi = lambda peer: lambda _, path: perf_rows(path, lambda a: peer if a == "mpi" else None)
        gloo = {"gloo:ring_chunked": "gloo ring_chunked", "gloo:halving_doubling": "gloo halving_doubling"}
        jobs += [
            Job("all_reduce", ["ringgrad shm"], run2 + [b / "all_reduce_perf"] + sweep, ours("ringgrad shm")),
            Job("all_reduce", ["ringgrad tcp"], run2 + [b / "all_reduce_perf"] + sweep, ours("ringgrad tcp"),
                env={"RINGGRAD_SHM": "0"}),
            Job("all_reduce", ["Open MPI shm"], mpirun + [b / "all_reduce_perf", "--backend", "both"] + sweep,
                mpi("Open MPI shm"), needs=[("Open MPI (openmpi-bin)", args.mpirun)]),
            Job("all_reduce", ["Open MPI tcp"], mpirun[:2] + ["--mca", "btl", "tcp,self"] + mpirun[2:]
                + [b / "all_reduce_perf", "--backend", "both"] + sweep, mpi("Open MPI tcp"),
                needs=[("Open MPI (openmpi-bin)", args.mpirun)]),
            Job("all_reduce", list(gloo.values()), run2 + [b / "gloo_all_reduce_perf", "-a", "auto"] + sweep,
                lambda _, path: perf_rows(path, gloo.get), env={"RINGGRAD_SHM": "0"},
                needs=[("gloo (libgloo-dev, then a rebuild)", b / "gloo_all_reduce_perf")]),
            Job("all_reduce", ["PyTorch gloo"], [python, HERE / "torch_all_reduce.py", "--port", "{port}", "--iters", "50",
                                                 "--sizes"] + sizes,
                lambda out, _: {"PyTorch gloo": {k: v for r in last_json_line(out)["rows"]
                                                 for k, v in ((("all_reduce", r["size"]), r["time_us"]),
                                                              (("all_reduce busbw", r["size"]), r["busbw"]))}},
                needs=torch),
        ]
    if "latency" in sections:
        # Small all-reduces, 10,000 calls a size, where a microsecond is the whole measurement.
        small = ["-b", "8", "-e", "64K", "-f", "2", "-n", "10000", "-w", "1000", "--warmup_ms", WARMUP_MS, "--json", "{json}"]
        shm = lambda a: "ringgrad shm" if a.startswith("auto") else None
        jobs += [
            Job("latency", ["ringgrad shm", OUT_OF_PLACE], run2 + [b / "all_reduce_perf"] + small,
                lambda _, path: {**perf_rows(path, shm),
                                 **perf_rows(path, lambda a: OUT_OF_PLACE if a.startswith("auto") else None, "out_of_place")}),
            Job("latency", [NO_CHECK], run2 + [b / "all_reduce_perf"] + small,
                lambda _, path: perf_rows(path, lambda a: NO_CHECK if a.startswith("auto") else None),
                env={"RINGGRAD_CHECK": "0"}),
            Job("latency", ["ringgrad tcp"], run2 + [b / "all_reduce_perf"] + small,
                lambda _, path: perf_rows(path, lambda a: "ringgrad tcp" if a.startswith("auto") else None),
                env={"RINGGRAD_SHM": "0"}),
            Job("latency", ["Open MPI shm"], mpirun + [b / "all_reduce_perf", "--backend", "both"] + small,
                lambda _, path: perf_rows(path, lambda a: "Open MPI shm" if a == "mpi" else None),
                needs=[("Open MPI (openmpi-bin)", args.mpirun)]),
            Job("latency", ["Open MPI tcp"], mpirun[:2] + ["--mca", "btl", "tcp,self"] + mpirun[2:]
                + [b / "all_reduce_perf", "--backend", "both"] + small,
                lambda _, path: perf_rows(path, lambda a: "Open MPI tcp" if a == "mpi" else None),
                needs=[("Open MPI (openmpi-bin)", args.mpirun)]),
        ]
    if "collectives" in sections:
        for tool in ["all_gather", "reduce_scatter", "broadcast", "all_to_all"]:
            split = lambda a: "Open MPI shm" if a == "mpi" else "ringgrad shm" if a.startswith("auto") else None
            jobs.append(Job("collectives", ["ringgrad shm", "Open MPI shm"],
                            mpirun + [b / f"{tool}_perf", "--backend", "both", "-b", "8", "-e", "8M", "-f", "1024",
                                      "-n", "50", "-w", "5", "--warmup_ms", WARMUP_MS, "--json", "{json}"],
                            lambda _, path: perf_rows(path, split), needs=[("Open MPI (openmpi-bin)", args.mpirun)]))
    gpt = ["--data", args.data, "--config", "baby", "--max_iters", "45", "--eval_interval", "100000",
           "--sample_tokens", "0", "--log_interval", "100000", "--threads", "1"]
    twin = [python, HERE / "torch_gpt.py", "--data", args.data, "--steps", "40", "--warmup_steps", "5", "--port", "{port}"]
    if "gpt" in sections:
        jobs += [Job("gpt", ["ringgrad"], [b / "train_gpt"] + gpt,
                     lambda out, _: {"ringgrad": {("ms per step",): number_after(out, "ms:")}}),
                 Job("gpt", ["PyTorch"], twin, lambda out, _: {"PyTorch": {("ms per step",): last_json_line(out)["ms_per_step_median"]}},
                     needs=torch),
                 # The step's GEMM shapes alone, by the OpenBLAS kernels the step loads: their time over
                 # the step's is the step's GFLOP/s as a share of the GEMMs' own rate.
                 Job("gpt", [GEMMS], [b / "gemm_libraries", "--library", "OpenBLAS", "--rounds", "3"],
                     lambda out, _: {GEMMS: {("ms per step",): last_number_on(out, "the step's GEMMs (ms)")}})]
    if "ddp" in sections:
        jobs += [Job("ddp", ["ringgrad"], run2 + [b / "train_gpt"] + gpt + ["--batch_size", "24", "--strategy", "ddp"],
                     lambda out, _: {"ringgrad": {("tokens/s",): number_after(out, "tokens/s), ")}}),
                 Job("ddp", ["PyTorch"], twin + ["--world_size", "2", "--batch_size", "12"],
                     lambda out, _: {"PyTorch": {("tokens/s",): last_json_line(out)["tokens_per_s"]}}, needs=torch)]
        # The ceiling DDP can reach on these cores: two one-process runs of 12 sequences at once,
        # their tokens/s summed, as if the ranks never had to talk.
        one = shlex.join(map(str, [b / "train_gpt"] + gpt))
        both = f"{one} >'{{json}}.0' & a=$!; {one} >'{{json}}.1' & b=$!; wait $a; s=$?; wait $b || exit; exit $s"
        jobs.append(Job("ddp", [CEILING], ["sh", "-c", both],
                        lambda _, path: {CEILING: {("tokens/s",): sum(number_after(Path(f"{path}.{i}").read_text(), "tokens/s), ")
                                                                      for i in (0, 1))}}))
    if "torch" in sections:
        # PyTorch over each backend: the same scripts, --backend the only difference.
        on_path = {"PYTHONPATH": str(Path(args.build).resolve() / "python")}
        reduce = [python, HERE / "torch_all_reduce.py", "--port", "{port}", "--iters", "200", "--sizes", *TORCH_SIZES]
        mlp_twin = [python, HERE / "torch_mlp.py", "--port", "{port}", "--world_size", "2"]
        for backend in ("ringgrad", "gloo"):
            peer = f"PyTorch on {backend}"
            rows = lambda peer: lambda out, _: {peer: {("all_reduce", r["size"]): r["time_us"]
                                                       for r in last_json_line(out)["rows"]}}
            jobs += [Job("torch", [peer], reduce + ["--backend", backend], rows(peer), env=on_path, needs=torch),
                     Job("torch", [peer], twin + ["--world_size", "2", "--batch_size", "12", "--backend", backend],
                         (lambda peer: lambda out, _: {peer: {("DDP baby GPT", "tokens/s"): last_json_line(out)["tokens_per_s"]}})(peer),
                         env=on_path, needs=torch),
                     Job("torch", [peer], mlp_twin + ["--backend", backend],
                         (lambda peer: lambda out, _: {peer: {("DDP MLP", "samples/s"): last_json_line(out)["samples_per_s"]}})(peer),
                         env=on_path, needs=torch)]
        # DDP's ceiling on these cores: each twin as two one-process runs of a rank's share at once,
        # their rates summed, as if the ranks never had to talk.
        alone = lambda command: (f"{shlex.join(map(str, command))} >'{{json}}.0' & a=$!; "
                                 f"{shlex.join(map(str, command))} >'{{json}}.1' & b=$!; wait $a; s=$?; wait $b || exit; exit $s")
        summed = lambda key, field: lambda _, path: {TORCH_CEILING: {key: sum(last_json_line(Path(f"{path}.{i}").read_text())[field]
                                                                            for i in (0, 1))}}
        gpt_alone = [a for a in twin if a != "--port" and a != "{port}"] + ["--batch_size", "12"]
        mlp_alone = [python, HERE / "torch_mlp.py", "--batch_size", "32"]
        jobs += [Job("torch", [TORCH_CEILING], ["sh", "-c", alone(gpt_alone)], summed(("DDP baby GPT", "tokens/s"), "tokens_per_s"),
                     needs=torch),
                 Job("torch", [TORCH_CEILING], ["sh", "-c", alone(mlp_alone)], summed(("DDP MLP", "samples/s"), "samples_per_s"),
                     needs=torch)]
    if "contest" in sections:
        budget = ["--time_budget", str(args.budget)]
        for recipe, flags in CONTEST_RECIPES.items():
            ours = lambda r: lambda out, _: {"ringgrad": {("full val loss", r): number_after(out, "(all "),
                                                          ("iterations", r): number_after(out, "iterations)")}}
            theirs = lambda r: lambda out, _: {"PyTorch": {("full val loss", r): last_json_line(out)["full_val_loss"],
                                                           ("iterations", r): last_json_line(out)["iterations"]}}
            jobs += [Job("contest", ["ringgrad"], run2 + [b / "train_gpt", "--data", args.data] + flags + budget
                         + ["--seed", "{round}", "--sample_tokens", "0", "--log_interval", "100000"], ours(recipe)),
                     Job("contest", ["PyTorch"], [python, HERE / "torch_contest.py", "--data", args.data, "--world_size", "2",
                                                  "--port", "{port}", "--config_json", "{config:" + " ".join(flags) + "}"]
                         + budget, theirs(recipe), needs=torch)]
    if "mlp" in sections:
        mlp = ["--epochs", "1", "--log-every", "100000", "--threads", "1"]
        ours = lambda key: lambda out, _: {"ringgrad": {key: number_after(out, "samples/s")}}
        theirs = lambda key: lambda out, _: {"PyTorch": {key: last_json_line(out)["samples_per_s"]}}
        mlp_twin = [python, HERE / "torch_mlp.py", "--port", "{port}"]
        jobs += [Job("mlp", ["ringgrad"], [b / "train_mlp"] + mlp, ours(("samples/s, 1 process",))),
                 Job("mlp", ["PyTorch"], mlp_twin, theirs(("samples/s, 1 process",)), needs=torch),
                 Job("mlp", ["ringgrad"], run2 + [b / "train_mlp"] + mlp, ours(("samples/s, 2 ranks",))),
                 Job("mlp", ["PyTorch"], mlp_twin + ["--world_size", "2"], theirs(("samples/s, 2 ranks",)), needs=torch)]
    return jobs


def printed_config(build, flags):
    done = subprocess.run([Path(build) / "bin" / "train_gpt", *flags, "--print_config"], capture_output=True, text=True)
    if done.returncode != 0:
        raise PeerFailed(f"train_gpt --print_config {' '.join(flags)} exited {done.returncode}: {done.stderr[-500:]}")
    return done.stdout.strip()


def check_peers(jobs, python):
    """Every program a job needs is there, before the first round: a missing peer is named at once."""
    for job in jobs:
        first = str(job.command[0])
        needs = list(job.needs) + [(f"{job.peers[0]}'s program", first)]
        for what, path in needs:
            path = str(path)
            if shutil.which(path) is None and not os.access(path, os.X_OK):
                raise PeerFailed(f"{what}: {path} is not there (scripts/compare.sh installs and builds what is missing)")
            if path == python and subprocess.run([python, "-c", "import torch"], capture_output=True).returncode != 0:
                raise PeerFailed(f"{what}: {python} cannot import torch (Debian's python3-torch)")


def summarize(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "values": values}


def table(title, results, peers, keys, higher_is_better, unit, against):
    """A markdown table: one row per key, median (min-max) per peer, and each peer's ratio to
    ringgrad's column `against[peer]` (above 1: ringgrad faster), the median of the rounds' ratios."""
    fmt = lambda v: f"{v:.3g}" if v < 100 else f"{v:,.0f}"
    head = ["", *[f"{p} ({unit})" for p in peers]] + [f"{against[p]} vs {p}" for p in peers if p in against]
    lines = [f"{title}: median (min-max){'; ratio above 1: ringgrad faster' if against else ''}", "", "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    for key in keys:
        cells = [" ".join(human_size(x) if isinstance(x, int) else x for x in key)]
        for p in peers:
            s = results[p][key]
            cells.append(f"{fmt(s['median'])} ({fmt(s['min'])}-{fmt(s['max'])})")
        for p in peers:
            if p in against:  # the median of the rounds' ratios: each round's two runs saw the same load
                pairs = zip(results[against[p]][key]["values"], results[p][key]["values"])
                ratios = [ours / theirs if higher_is_better else theirs / ours for ours, theirs in pairs]
                cells.append(f"{statistics.median(ratios):.2f}x")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def contest_table(r, budget, rounds):
    """The contest's table: per recipe, each framework's whole-split validation loss (mean, and each
    seed's) and iterations, and ringgrad's loss minus PyTorch's (below 0: ringgrad lower)."""
    lines = [f"The contest: whole-split validation loss after {budget:g} s of training steps on 2 ranks, seeds 1-{rounds} "
             "(lower is better)", "", "| recipe | ringgrad | PyTorch | ringgrad - PyTorch | iterations ringgrad / PyTorch |",
             "|---|---|---|---|---|"]
    for recipe in CONTEST_RECIPES:
        key, its = ("full val loss", recipe), ("iterations", recipe)
        cell = lambda p: (f"{statistics.mean(r[p][key]['values']):.4f} ("
                          + ", ".join(f"{v:.4f}" for v in r[p][key]["values"]) + ")")
        gap = statistics.mean(r["ringgrad"][key]["values"]) - statistics.mean(r["PyTorch"][key]["values"])
        lines.append(f"| {recipe} | {cell('ringgrad')} | {cell('PyTorch')} | {gap:+.4f} | "
                     f"{r['ringgrad'][its]['median']:,.0f} / {r['PyTorch'][its]['median']:,.0f} |")
    return "\n".join(lines)


def human_size(n):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sections", nargs="*", help=f"what to compare: all (the default: {', '.join(SECTIONS)}) or some of those and "
                        f"{', '.join(EXTRA)} (run only when named)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--build", default="build")
    parser.add_argument("--data", default="data/tinyshakespeare.txt")
    parser.add_argument("--out", default="bench/results")
    parser.add_argument("--python", default="/usr/bin/python3", help="the Python that imports torch (Debian's)")
    parser.add_argument("--mpirun", default="mpirun", help="Open MPI's launcher")
    parser.add_argument("--budget", type=float, default=300, help="contest: seconds of training steps per run")
    parser.add_argument("--isa", choices=["native", "avx2"], default="native",
                        help="avx2: run as on an AVX2-only machine (OpenBLAS's and PyTorch's AVX2 kernels)")
    parser.add_argument("--check-only", action="store_true", help="check that every peer can run, and stop")
    parser.add_argument("--args-only", action="store_true", help="check the arguments, and stop (before a build)")
    args = parser.parse_args()
    unknown = [s for s in args.sections if s not in SECTIONS + ["all"] + EXTRA]
    if unknown:
        parser.error(f"unknown section {', '.join(unknown)}: choose all or some of {', '.join(SECTIONS + EXTRA)}")
    sections = SECTIONS if not args.sections or args.sections == ["all"] else args.sections
    if "all" in sections:
        sections = SECTIONS + [s for s in sections if s not in SECTIONS + ["all"]]
    if args.budget <= 0:
        parser.error(f"--budget {args.budget}: seconds of training, more than 0")
    if {"gpt", "ddp", "contest", "torch"} & set(sections) and not Path(args.data).is_file():
        why = "is a directory, not a file" if Path(args.data).is_dir() else "no such file"
        parser.error(f"--data {args.data}: {why} (the GPT rows need the text, tinyshakespeare.txt)")
    where = machine()
    if args.isa == "avx2" and where["isa"] == "SSE only":
        parser.error(f"--isa avx2: this CPU ({where['cpu']}) has no AVX2")
    if args.args_only:
        return 0
    sizes = [8 * 8 ** i for i in range(8)]  # 8 B to 16 MiB
    if os.getuid() == 0:  # mpirun refuses root without these
        os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if args.isa == "avx2":  # what an AVX2-only machine would run, for both frameworks
        os.environ.update(OPENBLAS_CORETYPE="Haswell", DNNL_MAX_CPU_ISA="AVX2", ATEN_CPU_CAPABILITY="avx2")
        where["run_as"] = "AVX2-only"
    elif where["isa"] == "AVX-512":  # the OpenBLAS kernels ringgrad loads here (tensor/openblas.h), for PyTorch too
        os.environ.setdefault("OPENBLAS_CORETYPE", "SkylakeX")
    jobs = jobs_for(sections, args, sizes)
    try:
        check_peers(jobs, args.python)
        if args.check_only:
            print(f"compare: every peer of {', '.join(sections)} can run")
            return 0
        measured = {}  # section -> peer -> key -> [values]
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.rounds):
                for i, job in enumerate(jobs):
                    print(f"round {r + 1}/{args.rounds}: {job.label}", flush=True)
                    for peer, values in job.run(f"{tmp}/{r}_{i}.json", r + 1, args.build).items():
                        for key, v in values.items():
                            measured.setdefault(job.section, {}).setdefault(peer, {}).setdefault(key, []).append(v)
    except PeerFailed as e:
        print(f"compare: {e}", file=sys.stderr)
        return 1
    where["load_after"] = open("/proc/loadavg").read().split()[:3]
    openblas, aten = os.environ.get("OPENBLAS_CORETYPE"), os.environ.get("ATEN_CPU_CAPABILITY")
    dnnl = os.environ.get("DNNL_MAX_CPU_ISA")
    # Some of ringgrad's float32 GEMMs go to oneDNN where its AVX2 or AVX-512 kernels run
    # (tensor/onednn.h): which ones depends on those kernels.
    onednn = (where["isa"] != "SSE only" and ctypes.util.find_library("dnnl")
              and os.environ.get("RINGGRAD_ONEDNN") != "0" and dnnl not in ("SSE41", "AVX"))
    kernels = "AVX-512" if where["isa"] == "AVX-512" and dnnl != "AVX2" else "AVX2"
    by_onednn = f"; ringgrad runs some GEMMs on oneDNN's {kernels} kernels" if onednn else ""
    emulated = ""
    if args.isa == "avx2":
        emulated = "; as on an AVX2-only machine (--isa avx2)"
        if where["isa"] == "AVX-512":
            emulated += ", except ringgrad's GELU, which runs its AVX-512 build"
    header = (f"Machine: {where['cpu']} ({where['isa']}), {where['cores']} cores, load average {' '.join(where['load'])} "
              f"before and {' '.join(where['load_after'])} after; {args.rounds} interleaved round{'s' if args.rounds > 1 else ''}; one thread per "
              f"process{'; OPENBLAS_CORETYPE=' + openblas + ' for ringgrad and PyTorch alike' if openblas else ''}"
              f"{'; DNNL_MAX_CPU_ISA=' + dnnl if dnnl else ''}"
              f"{'; ATEN_CPU_CAPABILITY=' + aten + ' for PyTorch' if aten else ''}"
              f"{by_onednn}"
              f"{emulated}.")
    out = [header, ""]
    results = {s: {p: {k: summarize(v) for k, v in peers.items()} for p, peers in by_peer.items()}
               for s, by_peer in measured.items()}
    if "all_reduce" in results:
        r = results["all_reduce"]
        big = [("all_reduce busbw", s) for s in sizes if s >= 256 << 10]  # where bandwidth is the measure
        for path, peers in (("shared memory", ["ringgrad shm", "Open MPI shm"]),
                            ("TCP over loopback", ["ringgrad tcp", "Open MPI tcp", "gloo ring_chunked",
                                                   "gloo halving_doubling", "PyTorch gloo"])):
            against = {p: peers[0] for p in peers[1:]}
            out += [table(f"all_reduce over {path}, 2 ranks, float32 sum, in place: time", r, peers,
                          [("all_reduce", s) for s in sizes], False, "us", against), ""]
            out += [table(f"all_reduce over {path}: busbw (the ratios are the time's)", r, peers, big, True, "GB/s",
                          {}), ""]
    if "latency" in results:
        r = results["latency"]
        keys = sorted(k for k in r["ringgrad shm"] if not k[0].endswith("busbw"))
        out += [table("Small all_reduces over shared memory, 2 ranks, float32 sum, in place unless named, 10,000 calls a "
                      "size: time (against the out-of-place column and the unchecked run, the ratio is ringgrad's "
                      "in-place checked time over theirs)", r,
                      ["ringgrad shm", "Open MPI shm", OUT_OF_PLACE, NO_CHECK], keys, False, "us",
                      {p: "ringgrad shm" for p in ("Open MPI shm", OUT_OF_PLACE, NO_CHECK)}), ""]
        out += [table("Small all_reduces over TCP on loopback: time", r, ["ringgrad tcp", "Open MPI tcp"], keys, False, "us",
                      {"Open MPI tcp": "ringgrad tcp"}), ""]
    if "collectives" in results:
        r = results["collectives"]
        keys = sorted(k for k in r["ringgrad shm"] if not k[0].endswith("busbw"))
        out += [table("Other collectives, 2 ranks, in place: time", r, ["ringgrad shm", "Open MPI shm"], keys, False,
                      "us", {"Open MPI shm": "ringgrad shm"}), ""]
    for section, title in (("gpt", "baby GPT step, one process (B 12, T 64)"),
                           ("ddp", "baby GPT, DDP on 2 ranks (12 sequences each: global batch 24)"),
                           ("mlp", "MLP 784-256-10 on Fashion-MNIST, one epoch (global batch 64: 32 per rank on 2)")):
        if section in results:
            r = results[section]
            keys = sorted(r["ringgrad"])
            higher = section != "gpt"
            ceiling = next((p for p in (CEILING, GEMMS) if p in r), None)
            peers = ["ringgrad", "PyTorch"] + ([ceiling] if ceiling else [])
            if ceiling == CEILING:
                title += f" (against {CEILING}, DDP's ceiling, the ratio is the share of it reached)"
            elif ceiling == GEMMS:
                title += (f" (against {GEMMS}, by OpenBLAS, the ratio is the step's GFLOP/s as a share of the GEMMs' "
                          "rate, counting the GEMMs' flops)")
            out += [table(title, r, peers, keys, higher, "ms" if section == "gpt" else "per s",
                          {p: "ringgrad" for p in peers[1:]}), ""]
    if "torch" in results:
        r = results["torch"]
        peers = ["PyTorch on ringgrad", "PyTorch on gloo"]
        out += [table("PyTorch over its ringgrad backend and over gloo, 2 ranks: torch.distributed.all_reduce (float32 "
                      "sum, in place), time", r, peers, [("all_reduce", s) for s in TORCH_SIZES], False, "us",
                      {"PyTorch on gloo": "PyTorch on ringgrad"}), ""]
        out += [table(f"PyTorch DDP over its ringgrad backend and over gloo, 2 ranks (baby GPT: 12 sequences each; MLP: "
                      f"32 samples each; against {TORCH_CEILING}, DDP's ceiling, the ratio is the share of it reached)", r,
                      peers + [TORCH_CEILING], [("DDP baby GPT", "tokens/s"), ("DDP MLP", "samples/s")], True, "per s",
                      {"PyTorch on gloo": "PyTorch on ringgrad", TORCH_CEILING: "PyTorch on ringgrad"}), ""]
    if "contest" in results:
        out += [contest_table(results["contest"], args.budget, args.rounds), ""]
    text = "\n".join(out)
    print("\n" + text)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    serial = {s: {p: {" ".join(map(str, k)): v for k, v in peers.items()} for p, peers in by_peer.items()}
              for s, by_peer in results.items()}
    # Sections run only when named write a file of their own, so compare.json keeps the last full run.
    name = "compare.json" if set(sections) & set(SECTIONS) else "_".join(sections) + ".json"
    json.dump({"machine": where, "rounds": args.rounds, "results": serial, "tables": text},
              open(f"{args.out}/{name}", "w"), indent=1)
    written = compare_plots.write(results, sizes, where, args.out)
    print("wrote " + ", ".join([f"{args.out}/{name}"] + written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
