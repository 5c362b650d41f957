#!/usr/bin/env bash
# Data-parallel training on this machine, ringgrad beside PyTorch (Debian's python3-torch, gloo):
# the baby GPT and the 784-256-10 MLP on 1 process and on 2, each strategy, same per-rank batch.
#   scripts/compare_data_parallel.sh [BUILD_DIR] [GPT_ITERS]   -> a table on stdout
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
iters=${2:-150}
run="$build/bin/ringgrad-run --nproc-per-node 2"
shared=../shared  # the data and the PyTorch twins of the examples
gpt="$build/bin/train_gpt --data $shared/data/tinyshakespeare.txt --config baby --max_iters $iters --eval_interval 1000000 --eval_iters 1 --sample_tokens 1"
torch_gpt="/usr/bin/python3 $shared/reference/torch_gpt.py --no_eval --max_iters $iters"
torch_mlp="/usr/bin/python3 $shared/reference/torch_mlp.py --epochs 1"
# tokens/s of all ranks over every step (the mean step) and at the median step (what the PyTorch
# twin reports), from train_gpt's summary line.
mean_tps() { grep -o "wall): [0-9]* tokens/s" "$@" | awk '{s += $2} END {print s}'; }
median_tps() { grep -o "ms: [0-9]* tokens/s" "$@" | awk '{s += $2} END {print s}'; }
gpt_row() {  # label, command...
  local label=$1; shift
  local out; out=$(mktemp)
  "$@" > "$out" 2>&1
  # Absent on one process (no waits), hence the "|| true".
  local wait; wait=$(grep -o "comm wait by rank: .*" "$out" | cut -d' ' -f5- || true)
  local mem; mem=$(grep -o "parameters [0-9.]* MiB, gradients [0-9.]* MiB, optimizer [0-9.]* MiB; peak RSS [0-9]* MiB" "$out" | tail -1)
  echo "| $label | $(mean_tps "$out") | $(median_tps "$out") | ${wait:-} | ${mem:-} |"
  rm -f "$out"
}

echo "## GPT baby (n_layer 4, n_embd 128, T 64), 12 sequences per rank, $iters steps, 1 BLAS thread per process"
echo "| run | tokens/s (all ranks) | at the median step | comm wait by rank | model state on rank 0 |"
echo "|---|---|---|---|---|"
gpt_row "ringgrad, 1 process" $gpt --batch_size 12
# The machine's own ceiling for 2 ranks: two 1-process runs at once that never talk.
pair_row() {  # label, command...
  local label=$1; shift
  local a b; a=$(mktemp); b=$(mktemp)
  "$@" > "$a" 2>&1 &
  "$@" > "$b" 2>&1
  wait
  echo "| $label | $(mean_tps "$a" "$b") | $(median_tps "$a" "$b") | | |"
  rm -f "$a" "$b"
}
pair_row "two independent 1-process runs at once (no communication)" $gpt --batch_size 12
for s in ddp-naive ddp zero1 zero2 fsdp; do gpt_row "ringgrad $s, 2 ranks" $run $gpt --batch_size 24 --strategy $s; done
gpt_row "ringgrad ddp without overlap, 2 ranks" $run $gpt --batch_size 24 --strategy ddp --overlap false
gpt_row "ringgrad ddp over TCP (RINGGRAD_SHM=0), 2 ranks" env RINGGRAD_SHM=0 $run $gpt --batch_size 24 --strategy ddp
# PyTorch as installed (OpenBLAS picks its generic kernels on CPUs it does not know), and with
# the AVX-512 kernels ringgrad names (tensor/openblas.h). An empty OPENBLAS_CORETYPE is not the
# same as none, so the first case removes the variable.
torch_rate() { "$@" 2>&1 | grep -o '"[a-z]*_per_s_global": [0-9.]*' | awk '{printf "%.0f", $2}'; }
blas_as_installed="env -u OPENBLAS_CORETYPE"
blas_skylakex="env OPENBLAS_CORETYPE=SkylakeX"
for blas in "$blas_as_installed" "$blas_skylakex"; do
  note=", ${blas#env }"
  echo "| PyTorch, 1 process$note | | $(torch_rate $blas $torch_gpt) | | |"
  echo "| PyTorch DDP (gloo), 2 processes$note | | $(torch_rate $blas $torch_gpt --world_size 2) | | |"
done

echo
echo "## MLP 784-256-10 on Fashion-MNIST, 64 samples per rank, 1 epoch"
echo "| run | samples/s (all ranks, last window) |"
echo "|---|---|"
mlp="$build/bin/train_mlp --epochs 1 --log-every 100000"
echo "| ringgrad, 1 process | $($mlp --batch-size 64 | grep -o '[0-9]* samples/s' | tail -1) |"
echo "| ringgrad ddp, 2 ranks | $($run $mlp --batch-size 128 | grep -o '[0-9]* samples/s' | tail -1) |"
echo "| ringgrad ddp over TCP (RINGGRAD_SHM=0), 2 ranks | $(RINGGRAD_SHM=0 $run $mlp --batch-size 128 | grep -o '[0-9]* samples/s' | tail -1) |"
for blas in "$blas_as_installed" "$blas_skylakex"; do
  note=", ${blas#env }"
  echo "| PyTorch, 1 process$note | $(torch_rate $blas $torch_mlp) |"
  echo "| PyTorch DDP (gloo), 2 processes$note | $(torch_rate $blas $torch_mlp --world_size 2) |"
done
