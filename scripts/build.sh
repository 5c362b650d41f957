#!/usr/bin/env bash
# Builds ringgrad into ./build with the one configuration every script shares (Release,
# warnings as errors, CUDA code wherever nvcc is), so that running the demo, the tests and the
# comparisons in any order compiles each file once. With targets, builds only those.
#   scripts/build.sh [TARGET ...]
# Prints one line with its time; the compiler's output goes to build/logs/build.log, whose last
# lines are shown when the build fails.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build/logs
log=build/logs/build.log
what=${*:-everything}
printf 'building %s... ' "$what"
start=$SECONDS
if ! { cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DRINGGRAD_WERROR=ON -DRINGGRAD_CUDA=AUTO &&
       cmake --build build -j "$(nproc)" ${1:+--target "$@"}; } > "$log" 2>&1; then
  echo "FAILED after $((SECONDS - start)) s; the last lines of $log:"
  grep -E "error|Error" "$log" | tail -20 || tail -20 "$log"
  exit 1
fi
echo "$((SECONDS - start)) s"
