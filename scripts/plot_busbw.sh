#!/usr/bin/env bash
# Plots busbw against size, one line per algorithm or library, from *_perf --json files and
# torch_allreduce.py --json_out files: scripts/plot_busbw.sh OUT_PREFIX FILE.json...
# Writes OUT_PREFIX.svg and OUT_PREFIX.png with gnuplot (gnuplot-nox), titled with the
# collective, the ranks and the host path the files name. In-place columns for ringgrad, MPI,
# NCCL and libgloo (gloo is in place only), the per-call median for PyTorch's gloo.
set -euo pipefail
out=$1
shift
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
/usr/bin/python3 - "$data" "$@" <<'PY'
import json, sys, collections
outdir, files = sys.argv[1], sys.argv[2:]
series = collections.defaultdict(dict)  # label -> size -> best busbw over files (repeats)
titles = set()
for f in files:
    doc = json.load(open(f))
    if isinstance(doc, list):  # torch_allreduce.py
        for row in doc:
            s = series["torch gloo"]
            s[row["bytes"]] = max(s.get(row["bytes"], 0), row["busbw_GBps"])
        continue
    titles.add(f"{doc['collective']} busbw, {doc['nranks']} ranks" + (f", {doc['host_path']}" if doc.get("host_path") else ""))
    for row in doc["rows"]:
        other = {"mpi": "MPI", "nccl": "NCCL"}
        label = row["algo"] if row["algo"].startswith("gloo") else other.get(row["algo"], "ringgrad " + row["algo"])
        if "in_place" in row and row["size"] > 0:
            s = series[label]
            s[row["size"]] = max(s.get(row["size"], 0), row["in_place"]["busbw"])
with open(f"{outdir}/plot.gp", "w") as gp:
    plots = []
    for i, (label, pts) in enumerate(sorted(series.items())):
        path = f"{outdir}/s{i}.tsv"
        with open(path, "w") as t:
            for size in sorted(pts):
                t.write(f"{size}\t{pts[size]}\n")
        title = label.replace("_", "\\_")  # gnuplot's enhanced text reads _ as a subscript
        plots.append(f"'{path}' using 1:2 with linespoints title '{title}'")
    title = "; ".join(sorted(titles)) if titles else "all_reduce busbw, 2 ranks"
    gp.write("set title '" + title.replace("_", "\\_").replace("'", "") + "'\n")
    gp.write("plot " + ", ".join(plots) + "\n")
PY
for term in "svg size 900,560" "pngcairo size 900,560"; do
  ext=${term%% *}; ext=${ext/pngcairo/png}
  gnuplot <<GP
set terminal $term
set output '$out.$ext'
set xlabel 'size (bytes)'
set ylabel 'busbw (GB/s)'
set logscale x 2
set format x '2^{%L}'
set key top left
set grid
load '$data/plot.gp'
GP
done
echo "wrote $out.svg and $out.png"
