#!/usr/bin/env bash
# Plots training and validation loss against step, one pair of lines per run, from the JSON
# lines that train_mlp and train_gpt write with --log: scripts/plot_loss.sh OUT_PREFIX RUN.jsonl...
# Each run is labelled by its file name (ddp.jsonl -> "ddp"). Writes OUT_PREFIX.svg and
# OUT_PREFIX.png with gnuplot (gnuplot-nox).
set -euo pipefail
out=$1
shift
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
/usr/bin/python3 - "$data" "$@" <<'PY'
import json, os, sys
outdir, files = sys.argv[1], sys.argv[2:]
plots = []
for i, path in enumerate(files):
    label = os.path.splitext(os.path.basename(path))[0]
    steps, evals, val = [], [], []  # per-step losses (train_gpt's "loss") or evaluations
    for line in open(path):
        row = json.loads(line)
        step = row.get("step", row.get("iter"))
        if step is None:
            continue
        if "loss" in row:
            steps.append((step, row["loss"]))
        if "train_loss" in row:
            evals.append((step, row["train_loss"]))
        if "val_loss" in row:
            val.append((step, row["val_loss"]))
    train = steps or evals
    for kind, points, style in (("train", train, "lines"), ("val", val, "linespoints")):
        if not points:
            continue
        tsv = f"{outdir}/s{i}_{kind}.tsv"
        with open(tsv, "w") as f:
            f.writelines(f"{s}\t{v}\n" for s, v in points)
        plots.append(f"'{tsv}' using 1:2 with {style} linecolor {i + 1} title '{label} {kind}'")
with open(f"{outdir}/plot.gp", "w") as gp:
    gp.write("set xlabel 'step'\nset ylabel 'loss'\nset grid\nset key top right\n")
    gp.write("plot " + ", ".join(plots) + "\n")
PY
for term in "svg size 900,540" "pngcairo size 900,540"; do
  ext=${term%% *}; ext=${ext/pngcairo/png}
  gnuplot -e "set terminal $term noenhanced; set output '$out.$ext'" "$data/plot.gp"
done
echo "wrote $out.svg and $out.png"
