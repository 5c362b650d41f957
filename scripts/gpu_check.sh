#!/usr/bin/env bash
# The GPU check, for a machine with one GPU, nvcc, cmake, g++ and python3 with PyTorch (the other
# dependencies carried in .deps/, see scripts/collect_deps.sh). Phases, in this order, each step
# under its own time limit and all of them within GPU_CHECK_SECONDS (default 540):
#
#   build        configure build-gpu; build the four programs the phases run
#   collectives  collectives_device_test, output in full: the sweep of backend ringgrad at world
#                sizes 2, 3 and 4 (ranks sharing the GPU over CUDA IPC), then its other cases
#   tests        cuda_tests: every op on the GPU against its CPU twin
#   bench        train_bench --config shakespeare-char in fp32 and bf16: the step by op kind
#   twin         train_gpt beside its PyTorch twin (bench/compare/torch_gpt.py on the GPU, bf16
#                autocast), shakespeare-char, the same 200 iterations each; PyTorch as train_gpt
#                computes attention (the scores materialised), then with scaled_dot_product_attention
#                eager and compiled, where the PyTorch there has them
#   long         both to 5,000 iterations (nanoGPT's run), or, when the time left cannot fit that,
#                to the most iterations it fits for both (the twin phase's step times say how many)
#
# Writes each step's output, and summary.md (a table with one row per step, written as each
# ends, so it stands however the run ends), to $OUT (else gpu_check_out/). Without a GPU it
# builds, says so and exits 0 (1 if the build failed).
#
#   scripts/gpu_check.sh [--phases build,collectives,tests,bench,twin,long] [--dry-run | --rehearse] [DATA]
#   OUT=/tmp/check GPU_CHECK_SECONDS=570 BUILD_DIR=build-gpu scripts/gpu_check.sh
#
# --dry-run prints each step's command and time limit and runs nothing. --rehearse runs the
# phases after build on the CPU at the tiny config's size (20 and 200 iterations), to check the
# script itself where there is no GPU (with BUILD_DIR pointing at a built tree).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
phases=build,collectives,tests,bench,twin,long
dry_run=0 rehearse=0
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --phases) phases=$2; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    --rehearse) rehearse=1; shift ;;
    *) echo "gpu_check.sh: unknown option $1 (known: --phases LIST, --dry-run, --rehearse)" >&2; exit 2 ;;
  esac
done
data=${1:-data/tinyshakespeare.txt}
out=${OUT:-gpu_check_out}
total=${GPU_CHECK_SECONDS:-540}
build=${BUILD_DIR:-build-gpu}
bin=$build/bin
device=cuda config=shakespeare-char short_iters=200 long_iters=5000
((rehearse)) && device=cpu config=tiny short_iters=20 long_iters=200
reserve=10  # seconds kept back for the summary's last line
mkdir -p "$out"
summary=$out/summary.md
start=$SECONDS
status=0
declare -A took_of  # seconds each step took, by name
# libopenblas from .deps/ needs the Fortran runtime beside it.
[[ -d .deps/lib ]] && export LD_LIBRARY_PATH="$PWD/.deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

has_phase() { [[ ,$phases, == *,$1,* ]]; }
left() { echo $((total - (SECONDS - start))); }
note() { echo "$*" | tee -a "$summary"; }

# run NAME SECONDS COMMAND...: COMMAND under the smaller of SECONDS and the time left, its output
# to $out/NAME.txt; sets rc (the exit status, or "dry" or "late") and took. Fails when the
# command did not run or did not succeed.
run() {
  local name=$1 limit=$2
  shift 2
  local room=$(($(left) - reserve))
  ((limit > room)) && limit=$room
  took=0 lim=$limit
  if ((dry_run)); then
    rc=dry
    printf '%s, at most %d s:' "$name" "$limit"
    printf ' %q' "$@"
    echo
    return 1
  fi
  if ((limit < 10)); then
    rc=late
    return 1
  fi
  local t0=$SECONDS
  timeout --signal=KILL "$limit" "$@" >"$out/$name.txt" 2>&1
  rc=$? took=$((SECONDS - t0))
  took_of[$name]=$took
  ((rc == 0)) || status=1
  ((rc == 0))
}
verdict() {
  case $rc in
    0) echo ok ;;
    137) echo "KILLED at the $lim s limit" ;;
    late) echo "NOT RUN: $(left) s of $total left" ;;
    dry) echo "dry run" ;;
    *) echo "FAILED (exit $rc)" ;;
  esac
}
# row STEP [RESULT] [OUTPUT]: the step's line of the table, after run.
# A '|' in a result (Catch2's summary has them) is escaped, not read as a column's end.
row() {
  local result=${2:-}
  printf '| %s | %s | %s | %s | %s |\n' "$1" "$(verdict)" "$took" "${result//|/\\|}" "${3:+\`$3\`}" >>"$summary"
}
skip_row() { printf '| %s | NOT RUN: %s | 0 | | |\n' "$1" "$2" >>"$summary"; }

# What the outputs say. json FILE KEY_REGEX: the last number under a key matching KEY_REGEX in the
# JSON lines of FILE (train_gpt's --log, torch_gpt.py's result).
json() { grep -oE "\"($2)\": *-?[0-9.]+([eE][-+]?[0-9]+)?" "$1" 2>/dev/null | tail -1 | sed 's/.*: *//'; }
catch_result() { grep -E '^(All tests passed|test cases:|No tests ran)' "$1" 2>/dev/null | tail -1; }
bench_result() {  # train_bench: the median step and attention's mean share of it
  local median attention
  median=$(grep -oE 'median [0-9.]+ ms/iter' "$1" 2>/dev/null | head -1)
  attention=$(awk '$1 == "attention" {print $2 " ms/iter, " $3}' "$1" 2>/dev/null)
  [[ -n $median ]] && echo "$median; attention $attention"
}
# training_result FILE: iterations, median step and tokens/s by it, losses at the end, peak memory.
training_result() {
  local iters median train val peak
  iters=$(json "$1" 'trained_iters|iterations') median=$(json "$1" 'median_step_ms|ms_per_step_median')
  train=$(json "$1" train_loss) val=$(json "$1" val_loss) peak=$(json "$1" 'peak_gpu_mib|peak_rss_mib')
  [[ -n $median ]] || return 0
  awk -v i="$iters" -v m="$median" -v tk="$tokens_per_step" -v tl="$train" -v vl="$val" -v p="$peak" 'BEGIN {
    printf "%d iters, median %.2f ms/step (%.0f tokens/s)", i, m, tk / m * 1e3
    if (vl != "") printf ", loss train %.4f val %.4f", tl, vl
    if (p != "") printf ", peak %.0f MiB", p }'
}
# shellcheck disable=SC2317  # called by the EXIT trap
finish() {
  local verdict='every step that ran passed'
  ((status == 0)) || verdict='SOME STEPS FAILED'
  note ""
  note "Total: $((SECONDS - start)) s of the $total s budget; $verdict."
}
trap finish EXIT

echo "# GPU check, $(date -u '+%Y-%m-%d %H:%M UTC')" >"$summary"
note ""
note "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo 'nvidia-smi: not available')"
note "$(nvcc --version 2>/dev/null | tail -1), $(cmake --version | head -1), $(g++ --version | head -1)"
# PyTorch: python3, else Debian's /usr/bin/python3 (PYTHON overrides both); what it has, asked once
# (importing torch takes seconds): its version, CUDA and whether it sees a GPU, and 1/0 for
# scaled_dot_product_attention and torch.compile.
python="" torch_gpu=0 torch_sdpa=0 torch_compile=0
for candidate in ${PYTHON:-python3 /usr/bin/python3}; do
  if probe=$("$candidate" -c 'import torch, torch.nn.functional as F
print(torch.__version__, torch.version.cuda, int(torch.cuda.is_available()),
      int(hasattr(F, "scaled_dot_product_attention")), int(hasattr(torch, "compile")))' 2>/dev/null); then
    python=$candidate
    read -r torch_version torch_cuda torch_gpu torch_sdpa torch_compile <<<"$probe"
    break
  fi
done
if [[ -n $python ]]; then
  note "PyTorch $torch_version, CUDA $torch_cuda, $( ((torch_gpu)) && echo 'a GPU visible' || echo 'no GPU visible') ($python)"
else
  note "PyTorch: not found (tried ${PYTHON:-python3 /usr/bin/python3})"
fi
[[ -f $data ]] || note "$data is not there: train_bench trains on random text, train_gpt and torch_gpt.py fail."
note ""
note "| step | status | s | result | output |"
note "|---|---|---|---|---|"

if has_phase build; then
  # NCCL, where neither the CUDA toolkit nor the system has it: the wheel PyTorch carries.
  nccl_args=()
  nccl_dir=$([[ -n $python ]] && "$python" -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
  if [[ ! -f /usr/local/cuda/include/nccl.h && ! -f /usr/include/nccl.h && -f $nccl_dir/include/nccl.h &&
        -f $nccl_dir/lib/libnccl.so.2 ]]; then
    nccl_args=(-DRINGGRAD_NCCL_INCLUDE="$nccl_dir/include" -DRINGGRAD_NCCL_LIBRARY="$nccl_dir/lib/libnccl.so.2")
  fi
  # Warnings do not stop this build: the GPU machine's g++ may be newer and warn more.
  run configure 90 cmake -S . -B "$build" -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release -DRINGGRAD_WERROR=OFF "${nccl_args[@]}"
  row "configure $build${nccl_args:+ (NCCL from $nccl_dir)}" "" configure.txt
  [[ $rc == 0 || $rc == dry ]] || exit 1
  # -k: past a compile error, so every error is in build.txt at once and the rest still builds.
  run build 300 cmake --build "$build" -j "$(nproc)" --target cuda_tests collectives_device_test train_bench train_gpt -- -k
  row "build cuda_tests, collectives_device_test, train_bench, train_gpt" \
    "$(grep -E '^make.*\*\*\* \[' "$out/build.txt" 2>/dev/null | grep -o 'CMakeFiles/[^/ ]*\.dir' | sort -u |
       sed 's|CMakeFiles/||; s|\.dir$||' | tr '\n' ' ' | sed 's/^./failed in: &/')" build.txt
fi

# The tests' own notion of a GPU (cuda::device_count()): without one every case says why it skipped.
if ((!dry_run && !rehearse)); then
  probe=$("$bin/cuda_tests" "cuda element-wise: mixing devices throws std::invalid_argument" 2>&1)
  if [[ ! -x $bin/cuda_tests ]] || grep -q '^skipped:' <<<"$probe"; then
    note ""
    note "No GPU to run on: ${probe:-$bin/cuda_tests is not there}. Nothing else was run."
    exit $status
  fi
fi

if has_phase collectives; then
  # Catch2 reads a ',' in a spec as "or": the names' commas are escaped.
  for p in 2 3 4; do
    run "collectives_device_ws$p" 60 "$bin/collectives_device_test" -w NoTests -s --durations yes \
      "device collectives\\, backend ringgrad\\, world size $p"
    row "collectives_device_test: backend ringgrad, world size $p" "$(catch_result "$out/collectives_device_ws$p.txt")" \
      "collectives_device_ws$p.txt"
  done
  run collectives_device_rest 40 "$bin/collectives_device_test" -w NoTests -s --durations yes \
    "[device]~device collectives\\, backend ringgrad*"
  row "collectives_device_test: its other [device] cases (nccl, a killed rank)" \
    "$(catch_result "$out/collectives_device_rest.txt")" collectives_device_rest.txt
fi

if has_phase tests; then
  run cuda_tests 120 "$bin/cuda_tests" -w NoTests --durations yes
  row "cuda_tests: every case" "$(catch_result "$out/cuda_tests.txt")" cuda_tests.txt
fi

if has_phase bench; then
  # One attention path on a GPU (strided-batched cuBLAS, tensor/attention.cu), in both precisions.
  for dtype in fp32 bf16; do
    run "train_bench_$dtype" 60 "$bin/train_bench" --config "$config" --device "$device" --dtype "$dtype" --iters 20 \
      --warmup 3 --data "$data"
    row "train_bench --config $config, $dtype" "$(bench_result "$out/train_bench_$dtype.txt")" "train_bench_$dtype.txt"
  done
fi

# train_gpt's whole config, which torch_gpt.py takes as it is; the tokens of a step.
config_json=$("$bin/train_gpt" --config "$config" --print_config 2>/dev/null || echo '{}')
batch=$(json /dev/stdin batch_size <<<"$config_json") block=$(json /dev/stdin block_size <<<"$config_json")
tokens_per_step=$((${batch:-0} * ${block:-0}))
# train_gpt NAME SECONDS ITERS EVAL_ITERS, torch_gpt NAME SECONDS ITERS EVAL_ITERS [FLAGS...]: one
# run of the config in bf16 under a time limit, evaluated at the end on EVAL_ITERS batches.
train_gpt() {
  run "$1" "$2" "$bin/train_gpt" --data "$data" --config "$config" --device "$device" --dtype bf16 --max_iters "$3" \
    --eval_interval "$3" --eval_iters "$4" --log_interval 50 --sample_tokens 0 --log "$out/$1.jsonl"
  row "train_gpt, $3 iters" "$(training_result "$out/$1.jsonl")" "$1.txt"
}
torch_gpt() {
  local name=$1 limit=$2 iters=$3 eval_iters=$4
  shift 4
  run "$name" "$limit" "$python" bench/compare/torch_gpt.py --data "$data" --config_json "$config_json" \
    --device "$device" --dtype bf16 --warmup_steps 0 --steps "$iters" --eval_iters "$eval_iters" --log_interval 50 "$@"
  row "torch_gpt.py $*, $iters iters" "$(training_result "$out/$name.txt")" "$name.txt"
}
torch_ready() {  # torch_ready STEP: whether PyTorch can run on $device, else a row saying why not
  if [[ -z $python ]]; then
    skip_row "$1" "no python3 with PyTorch"
  elif [[ $device == cuda ]] && ((!torch_gpu)); then
    skip_row "$1" "this PyTorch sees no GPU"
  else
    return 0
  fi
  return 1
}

# The PyTorch variant the long phase runs: with scaled_dot_product_attention where it ran.
long_flags=(--attention matmul) long_name=twin_torch_matmul
if has_phase twin; then
  note "| *$config, bf16, $short_iters iterations each* | | | | |"
  train_gpt twin_train_gpt 90 "$short_iters" 20
  if torch_ready "torch_gpt.py"; then
    torch_gpt twin_torch_matmul 90 "$short_iters" 20 --attention matmul
    if ((torch_sdpa)); then
      torch_gpt twin_torch_sdpa 90 "$short_iters" 20 --attention sdpa
      [[ $rc == 0 ]] && long_flags=(--attention sdpa) long_name=twin_torch_sdpa
      if ((torch_compile)); then
        torch_gpt twin_torch_sdpa_compiled 150 "$short_iters" 20 --attention sdpa --compile
      else
        skip_row "torch_gpt.py --attention sdpa --compile" "this PyTorch has no torch.compile"
      fi
    else
      skip_row "torch_gpt.py --attention sdpa" "this PyTorch has no scaled_dot_product_attention"
    fi
  fi
fi

if has_phase long; then
  note "| *$config, bf16, to $long_iters iterations* | | | | |"
  # The iterations that fit both runs in the time left, by the twin phase's runs: their median
  # step (ms) and the rest of their time (start-up, mostly), plus 2 evaluations of 2 x 200 batches
  # at a third of a step; each run's limit is its share and a third more. Without the twin
  # phase's times: the full run, limited by the time left alone.
  mine=$(json "$out/twin_train_gpt.jsonl" median_step_ms) theirs=$(json "$out/$long_name.txt" ms_per_step_median)
  read -r iters limit_mine limit_theirs < <(awk -v room=$(($(left) - reserve)) -v most="$long_iters" -v short="$short_iters" \
    -v a="$mine" -v b="${theirs:-0}" -v ta="${took_of[twin_train_gpt]:-0}" -v tb="${took_of[$long_name]:-0}" 'BEGIN {
      if (a == "") { print most, room, room; exit }
      ra = ta - short * a / 1e3 + 800 * a / 3e3; rb = b > 0 ? tb - short * b / 1e3 + 400 * b / 3e3 : 0
      n = int((room - ra - rb) / ((a + b) / 1e3) / 100) * 100
      n = n > most ? most : n < 0 ? 0 : n
      printf "%d %d %d\n", n, 4 / 3 * (ra + n * a / 1e3) + 10, 4 / 3 * (rb + n * b / 1e3) + 10 }')
  if ((iters < long_iters / 10)); then
    skip_row "train_gpt and torch_gpt.py to $long_iters" \
      "$(left) s left fit $iters iterations at ${mine:-?} + ${theirs:-?} ms a step"
  else
    ((iters < long_iters)) &&
      note "| *the time left fits $iters of the $long_iters iterations (the schedule stays the full run's)* | | | | |"
    train_gpt long_train_gpt "$limit_mine" "$iters" 200
    torch_ready "torch_gpt.py" && torch_gpt long_torch "$limit_theirs" "$iters" 200 "${long_flags[@]}"
  fi
fi
exit $status
