#!/usr/bin/env bash
# The road of one blocking host all_reduce on 2 ranks of this host: the files its code enters,
# in order, for each size asked (default 8 bytes and 16 MiB). Builds build/ as the other scripts
# do (for ringgrad-run), and a second tree, build-road/, whose collectives library is compiled
# with -finstrument-functions (a few minutes the first time); runs bench/call_road/call_road.cc
# under ringgrad-run and prints what bench/call_road/road.py makes of rank 0's record (it asks
# gdb, installed when missing, where each function is defined). The element loops' helpers
# (reduce/dtype_dispatch.h, reduce/reduce_op.h) are left out of the record. RINGGRAD_* settings
# apply as usual:
#   scripts/call_road.sh [BYTES ...]
#   RINGGRAD_SHM_LINK=plain RINGGRAD_CHECK=0 scripts/call_road.sh 8
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
(( $# )) || sizes=(8 16777216)
scripts/install_deps.sh gdb python3
scripts/build.sh ringgrad-run
printf 'building the instrumented library into build-road/... '
start=$SECONDS
mkdir -p build-road
if ! { cmake -S . -B build-road -DCMAKE_BUILD_TYPE=Release -DRINGGRAD_CUDA=OFF -DRINGGRAD_CALL_ROAD=ON \
         -DCMAKE_CXX_FLAGS="-g -finstrument-functions -finstrument-functions-exclude-file-list=/usr/,reduce/dtype_dispatch.h,reduce/reduce_op.h" &&
       cmake --build build-road -j "$(nproc)" --target call_road; } > build-road/build.log 2>&1; then
  echo "FAILED; the last lines of build-road/build.log:"
  tail -20 build-road/build.log
  exit 1
fi
echo "$((SECONDS - start)) s"
build/bin/ringgrad-run --nproc-per-node 2 build-road/bin/call_road build-road/record "${sizes[@]}"
for bytes in "${sizes[@]}"; do
  echo
  echo "== all_reduce of $bytes bytes, rank 0 =="
  python3 bench/call_road/road.py build-road/bin/call_road "build-road/record.$bytes" "$PWD/"
done
