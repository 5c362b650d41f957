#!/usr/bin/env bash
# The GPU check: on a machine with one GPU, nvcc, cmake and g++ (the other dependencies
# carried in .deps/, see scripts/collect_deps.sh), builds into build-gpu, runs the GPU tests,
# the GEMM and training benchmarks, the baby GPT on the GPU beside the CPU and as 2 DDP ranks,
# nanoGPT's shakespeare-char GPT for what time is left, and the collectives' own section;
# writes every output and a summary.md to $OUT (else gpu_check_out/). All of it within 8
# minutes: each step has a time limit, and the big run's training budget is what the others
# leave (at most 300 s). Without a GPU it builds, says so, and exits 0
# (1 when the build failed).
#
#   scripts/gpu_check.sh [TINYSHAKESPEARE_TXT]     (default data/tinyshakespeare.txt)
#   BUILD_DIR=build OUT=/tmp/check GPU_CHECK_SECONDS=600 scripts/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
data=${1:-data/tinyshakespeare.txt}
out=${OUT:-gpu_check_out}
total=${GPU_CHECK_SECONDS:-480}  # the whole check's budget
build=${BUILD_DIR:-build-gpu}
mkdir -p "$out"
summary=$out/summary.md
start=$SECONDS
status=0
# libopenblas from .deps/ needs the Fortran runtime beside it.
[[ -d .deps/lib ]] && export LD_LIBRARY_PATH="$PWD/.deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

note() { echo "$*" | tee -a "$summary"; }
# step NAME SECONDS COMMAND...: runs with a time limit, output to $out/NAME.txt; one summary line.
step() {
  local name=$1 seconds=$2
  shift 2
  local t0=$SECONDS
  timeout --signal=KILL "$seconds" "$@" >"$out/$name.txt" 2>&1
  local rc=$?
  local verdict=ok
  if [[ $rc -eq 137 ]]; then verdict="KILLED after the $seconds s limit"; elif [[ $rc -ne 0 ]]; then verdict="FAILED (exit $rc)"; fi
  note "- $name: $verdict, $((SECONDS - t0)) s (\`$name.txt\`)"
  [[ $rc -eq 0 ]] || status=1
  return $rc
}
left() { echo $((total - (SECONDS - start))); }

echo "# GPU check, $(date -u '+%Y-%m-%d %H:%M UTC')" >"$summary"
note ""
note "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo 'nvidia-smi: not available')"
note "$(nvcc --version 2>/dev/null | tail -1), $(cmake --version | head -1), $(g++ --version | head -1)"
note ""
note "## Steps"

# NCCL, where neither the CUDA toolkit nor the system has it: the wheel PyTorch's python3
# carries (nvidia-nccl-cu*).
nccl_args=()
nccl_dir=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
if [[ ! -f /usr/local/cuda/include/nccl.h && ! -f /usr/include/nccl.h && -f $nccl_dir/include/nccl.h &&
      -f $nccl_dir/lib/libnccl.so.2 ]]; then
  nccl_args=(-DRINGGRAD_NCCL_INCLUDE="$nccl_dir/include" -DRINGGRAD_NCCL_LIBRARY="$nccl_dir/lib/libnccl.so.2")
  note "NCCL from $nccl_dir"
fi
# Warnings do not stop this build: the GPU machine's g++ may be newer than CI's and warn more;
# they stay in build.txt.
step configure 120 cmake -S . -B "$build" -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release -DRINGGRAD_WERROR=OFF "${nccl_args[@]}" || {
  note "configure failed: see configure.txt"
  exit 1
}
# -k: on a compile error, build the rest, so that the steps below run what did build and
# build.txt lists every error at once. The targets that failed are named: in a reused build
# directory their binaries are the last good build's, not this checkout's.
if ! step build 300 cmake --build "$build" -j 16 -- -k; then
  failed=$(grep -E '^make.*\*\*\* \[' "$out/build.txt" | grep -o 'CMakeFiles/[^/ ]*\.dir' | sort -u |
    sed 's|CMakeFiles/||; s|\.dir$||' | tr '\n' ' ')
  note "  - build failed in: ${failed:-(no target named; see build.txt)}; the steps below run what did build"
fi
bin=$build/bin
if [[ ! -x $bin/cuda_tests ]]; then
  note "cuda_tests did not build: nothing can run on the GPU"
  exit 1
fi

# The tests' own notion of a GPU (cuda::device_count()): without one every case says why it skipped.
probe=$("$bin/cuda_tests" "cuda element-wise: mixing devices throws std::invalid_argument" 2>&1)
if grep -q '^skipped:' <<<"$probe"; then
  note ""
  note "No GPU to run on ($(grep '^skipped:' <<<"$probe" | sed 's/^skipped: //')). Built only; nothing else was run."
  exit $status
fi

# The device collectives' sweep runs once, in the collectives section below (with its durations).
step ctest_cuda_device 150 ctest --test-dir "$build" -R "cuda|device" -E collectives_device_test -j 4 --timeout 120 \
  --output-on-failure
step gemm_bench_fp32 30 "$bin/gemm_bench" --device cuda --dtype fp32 --min-seconds 0.2
step gemm_bench_bf16 30 "$bin/gemm_bench" --device cuda --dtype bf16 --min-seconds 0.2
step train_bench_fp32 60 "$bin/train_bench" --config shakespeare-char --device cuda --dtype fp32 --iters 20 --warmup 3 --data "$data"
step train_bench_bf16 60 "$bin/train_bench" --config shakespeare-char --device cuda --dtype bf16 --iters 20 --warmup 3 --data "$data"

# The baby GPT, same seed, 200 iterations on the GPU, on the CPU, and as 2 DDP ranks sharing
# the GPU (gradients all-reduced over CUDA IPC; the same global batch): the loss at every
# iteration against the single GPU process's.
have_data=0
if [[ -f $data ]]; then
  have_data=1
  baby=(--data "$data" --config baby --max_iters 200 --log_interval 1 --eval_interval 200 --sample_tokens 0)
  for device in cuda cpu; do
    step "baby_$device" 90 "$bin/train_gpt" "${baby[@]}" --device "$device" --log "$out/baby_$device.jsonl"
  done
  step baby_ddp2_cuda 90 "$bin/ringgrad-run" --nproc-per-node 2 "$bin/train_gpt" "${baby[@]}" --device cuda \
    --log "$out/baby_ddp2_cuda.jsonl"
  # "loss" of each iteration's line (the eval lines carry train_loss/val_loss instead).
  losses() { grep -o '"loss":[-0-9.e+]*' "$1" | cut -d: -f2; }
  curve() {  # curve A B: the largest loss difference over the iterations both logged
    paste <(losses "$1") <(losses "$2") |
      awk '$1 != "" && $2 != "" {d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d; n++}
           END {printf "%d iterations compared, max |difference| = %.2e", n, m}'
  }
  note "  - baby GPT, loss on cuda vs cpu: $(curve "$out/baby_cuda.jsonl" "$out/baby_cpu.jsonl")"
  note "  - baby GPT, loss of 2 DDP ranks vs 1 process, both cuda: $(curve "$out/baby_ddp2_cuda.jsonl" "$out/baby_cuda.jsonl")"
else
  note "- baby GPT: NOT RUN: $data not found (pass the Tiny Shakespeare path as the argument)"
fi

# The collectives' section, before the big run so that the big run gets what remains.
if [[ -x scripts/gpu_check.d/collectives.sh ]]; then
  step collectives 260 scripts/gpu_check.d/collectives.sh "$build" "$out/collectives"
  [[ -f $out/collectives.txt ]] && sed 's/^/  - /' "$out/collectives.txt" >>"$summary"
else
  note "- collectives: NOT RUN: scripts/gpu_check.d/collectives.sh is not there"
fi

# nanoGPT's shakespeare-char GPT in bf16 for the time that is left, less ~60 s for start-up, the
# final evaluation (2 x 200 batches) and the sample.
budget=$(($(left) - 60))
((budget > 300)) && budget=300
if [[ $have_data -eq 0 ]]; then
  note "- shakespeare-char GPT: NOT RUN: $data not found"
elif ((budget < 20)); then
  note "- shakespeare-char GPT: NOT RUN: only $(left) s of the $total s budget left"
else
  step shakespeare_char $((budget + 90)) "$bin/train_gpt" --data "$data" --config shakespeare-char --device cuda \
    --dtype bf16 --time_budget "$budget" --sample_tokens 200 --log "$out/shakespeare_char.jsonl"
  note "  - training budget $budget s$( ((budget < 300)) && echo " (300 s asked; the steps before left less)")"
  grep -E '^trained|^eval iter|^model state' "$out/shakespeare_char.txt" | tail -3 | sed 's/^/  - /' >>"$summary"
fi

note ""
note "Total: $((SECONDS - start)) s of the $total s budget; $( ((status == 0)) && echo 'every step passed' || echo 'SOME STEPS FAILED')."
exit $status
