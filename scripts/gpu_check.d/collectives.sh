#!/usr/bin/env bash
# GPU check of the device collectives: the device tests (both backends, world sizes 2-4; ranks
# share the GPU when there is one), all_reduce_perf with ringgrad and NCCL side by side on 2
# processes, 64 MiB to 1 GiB, and CUDA IPC copy bandwidth beside cudaMemcpy device-to-device.
# Usage: scripts/gpu_check.d/collectives.sh BUILD_DIR OUT_DIR   (at most 4 minutes)
set -uo pipefail
build=${1:?usage: collectives.sh BUILD_DIR OUT_DIR}
out=${2:?usage: collectives.sh BUILD_DIR OUT_DIR}
mkdir -p "$out"
status=0
run() {  # run NAME SECONDS COMMAND...: output to OUT_DIR/NAME.txt, a line per step on stdout
  local name=$1 seconds=$2
  shift 2
  local t0=$SECONDS
  timeout --signal=KILL "$seconds" "$@" >"$out/$name.txt" 2>&1
  local rc=$?
  echo "collectives: $name: exit $rc after $((SECONDS - t0)) s (output: $out/$name.txt)"
  [[ $rc -eq 0 ]] || status=1
}

nvidia-smi -L >"$out/gpus.txt" 2>&1
run device_test 150 "$build/bin/collectives_device_test" -w NoTests -s --durations yes "[device]"
run all_reduce_perf_cuda 60 "$build/bin/ringgrad-run" --nproc-per-node 2 "$build/bin/all_reduce_perf" \
  -b 64M -e 1G -f 2 -n 10 -w 2 --device cuda --backend both --json "$out/all_reduce_perf_cuda.json"
run ipc_copy_bench 30 "$build/bin/ringgrad-run" --nproc-per-node 2 "$build/bin/ipc_copy_bench" -e 1024 -n 10
exit $status
