#!/usr/bin/env bash
# The road of one blocking host all_reduce on 2 ranks of this host: the files its code enters,
# in order, for each size asked (default 8 bytes and 16 MiB). Compiles a second copy of the
# collectives library into build-road/ with -finstrument-functions (a few minutes the first
# time), runs bench/call_road/call_road.cc under ringgrad-run, and prints what
# bench/call_road/road.py makes of rank 0's record. RINGGRAD_* settings apply as usual:
#   scripts/call_road.sh [BYTES ...]
#   RINGGRAD_SHM_LINK=plain RINGGRAD_CHECK=0 scripts/call_road.sh 8
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("${@:-8}")
[[ $# -eq 0 ]] && sizes=(8 16777216)
command -v gdb > /dev/null || { echo "call_road.sh needs gdb (apt install gdb)"; exit 1; }
scripts/build.sh ringgrad-run > /dev/null
mkdir -p build-road
printf 'building the instrumented library... '
start=$SECONDS
{ cmake -S . -B build-road -DCMAKE_BUILD_TYPE=Release -DRINGGRAD_CUDA=OFF \
    -DCMAKE_CXX_FLAGS="-g -finstrument-functions -finstrument-functions-exclude-file-list=/usr/include,/usr/lib" &&
  cmake --build build-road -j "$(nproc)" --target ringgrad_collectives &&
  g++ -std=c++20 -O2 -g -no-pie -I. bench/call_road/call_road.cc -o build-road/call_road \
    build-road/collectives/libringgrad_collectives.a build-road/transport/libringgrad_transport.a \
    build-road/trace/libringgrad_trace.a -lfmt -lpthread -lrt $(mpicxx --showme:link 2> /dev/null || true)
} > build-road/build.log 2>&1 || { echo "FAILED; see build-road/build.log"; tail -20 build-road/build.log; exit 1; }
echo "$((SECONDS - start)) s"
build/bin/ringgrad-run --nproc-per-node 2 build-road/call_road build-road/record "${sizes[@]}"
for bytes in "${sizes[@]}"; do
  echo
  echo "== all_reduce of $bytes bytes, rank 0 =="
  python3 bench/call_road/road.py build-road/call_road "build-road/record.$bytes" "$PWD/"
done
