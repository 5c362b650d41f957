#!/usr/bin/env bash
# Times ringgrad's train_bench and the PyTorch twin of the same model (shared/reference/
# torch_gpt.py: baby config, B 12, T 64, one thread, eval off) on this machine, taking turns
# so that all see the same load, and prints each median ms/iter and PyTorch / ringgrad.
# PyTorch runs twice: as installed, and with OPENBLAS_CORETYPE=SkylakeX, the OpenBLAS kernels
# ringgrad itself names on AVX-512 CPUs that OpenBLAS 0.3.21 does not recognise
# (tensor/openblas.h); on other CPUs the two PyTorch runs are the same.
#
#   bench/train_bench_vs_torch.sh [build-dir] [rounds]
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${RINGGRAD_SHARED:-$root/../shared}
data=$shared/data/tinyshakespeare.txt

torch_ms() {  # median ms/iter of 200 PyTorch steps (the first 10 excluded)
  /usr/bin/python3 "$shared/reference/torch_gpt.py" --no_eval --max_iters 200 --threads 1 --data "$data" |
    sed -n 's/^RESULT //p' | python3 -c 'import json, sys; print(round(json.load(sys.stdin)["ms_per_iter_median"], 2))'
}

for r in $(seq "$rounds"); do
  ours=$("$build/bin/train_bench" --data "$data" --iters 190 --warmup 10 --threads 1 |
         sed -n 's/.*median \([0-9.]*\) ms\/iter.*/\1/p')
  stock=$(torch_ms)
  named=$(OPENBLAS_CORETYPE=SkylakeX torch_ms)
  echo "round $r: ringgrad $ours ms/iter | PyTorch $stock ms/iter ($(python3 -c "print(round($stock / $ours, 2))")x)" \
       "| PyTorch with OPENBLAS_CORETYPE=SkylakeX $named ms/iter ($(python3 -c "print(round($named / $ours, 2))")x)"
done
