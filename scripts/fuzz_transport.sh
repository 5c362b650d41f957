#!/usr/bin/env bash
# Fuzzes the transport's network parsers (frame header, hello/reply, store messages) with
# clang's libFuzzer, ASan and UBSan, each target for a bounded time, seeded with the corpus in
# tests/transport/fuzz_corpus (which tests/transport/test_parsers.cc replays with g++).
#   scripts/fuzz_transport.sh [seconds per target, default 60]
# Needs clang and libclang-rt-14-dev. New inputs go to build-fuzz/, not into the repository;
# copy a crash or an interesting case into the corpus by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
out=build-fuzz
mkdir -p "$out"
sources=(transport/wire.cc transport/store_protocol.cc transport/fuzz/fuzz_targets.cc transport/fuzz/libfuzzer_main.cc)
for target in wire store; do
  clang++ -std=c++20 -O1 -g -I. -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -DRINGGRAD_FUZZ_TARGET="$target" "${sources[@]}" -lfmt -o "$out/fuzz_$target"
  rm -rf "$out/corpus_$target" && cp -r "tests/transport/fuzz_corpus/$target" "$out/corpus_$target"
  echo "== fuzzing $target for $seconds s"
  "$out/fuzz_$target" -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 \
    -artifact_prefix="$out/crash_${target}_" "$out/corpus_$target" 2>&1 | grep -E "^(#|==|stat::number_of_executed_units|INFO: (Seed|Running))|ERROR|SUMMARY" | tail -5
done
echo "fuzz_transport: no crash in ${seconds} s per target"
