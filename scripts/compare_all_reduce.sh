#!/usr/bin/env bash
# ringgrad's all_reduce beside libgloo (ring_chunked, halving_doubling) and PyTorch's gloo,
# 2 ranks over loopback, interleaved ROUNDS times (the machine may be shared: each round runs
# every contender once, and the plot and table keep each one's best round).
#   scripts/compare_all_reduce.sh [BUILD_DIR] [ROUNDS]   -> bench/results/all_reduce_*.json, .svg, .png
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
out=bench/results
mkdir -p "$out"
# gloo moves bytes over TCP only; ringgrad does too here, so the transports are the same and the
# algorithms and their implementation are what differ (docs/collectives.md has shared memory).
export RINGGRAD_SHM=0
launch() {  # ringgrad-run when built, else the same environment by hand
  if [ -x "$build/bin/ringgrad-run" ]; then
    "$build/bin/ringgrad-run" --nproc-per-node 2 "$@"
  else
    local port=$((20000 + RANDOM % 20000))
    RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@" >/dev/null &
    RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@"
    wait
  fi
}
files=()
for ((i = 1; i <= rounds; i++)); do
  launch "$build/bin/gloo_all_reduce_perf" -b 8 -e 64M -f 2 -n 20 -w 5 -a auto,ring,hd,tree --json "$out/all_reduce_ours_gloo_$i.json"
  # torch_allreduce.py steps by 4: from 8 B it visits odd powers of two, from 4 B the even ones.
  for min in 8 4; do
    /usr/bin/python3 ../shared/reference/torch_allreduce.py --nproc 2 --min_bytes $min --max_bytes 67108864 \
      --port $((30000 + RANDOM % 20000)) --json_out "$out/all_reduce_torch_${min}_$i.json"
    files+=("$out/all_reduce_torch_${min}_$i.json")
  done
  files+=("$out/all_reduce_ours_gloo_$i.json")
done
scripts/plot_busbw.sh "$out/all_reduce_busbw" "${files[@]}"
