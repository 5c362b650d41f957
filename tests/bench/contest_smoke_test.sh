#!/bin/sh
# compare.py contest end to end with 2-second budgets and one round: both frameworks run both
# recipes under the protocol and the table names each with its loss and iterations. Skipped
# (exit 77) where Debian's python3-torch is not installed.
# Usage: contest_smoke_test.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1 build=$2
/usr/bin/python3 -c "import torch" 2>/dev/null || { echo "python3-torch is not installed: skipped"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
data="$out/text.txt"  # a small generated text: the protocol, not the corpus, is under test
i=0
while [ $i -lt 600 ]; do echo "O for a Muse of fire, that would ascend the brightest heaven: $i"; i=$((i + 1)); done > "$data"
/usr/bin/python3 "$src/bench/compare/compare.py" contest --rounds 1 --budget 2 --build "$build" --data "$data" \
  --out "$out" | tee "$out/log.txt"
grep -E '^\| speedrun \| [0-9.]+ \([0-9.]+\) \| [0-9.]+ \([0-9.]+\) \| [-+][0-9.]+ \| [0-9,]+ / [0-9,]+ \|$' "$out/log.txt"
grep -E '^\| baby \| [0-9.]+ \([0-9.]+\) \| [0-9.]+ \([0-9.]+\) \| [-+][0-9.]+ \| [0-9,]+ / [0-9,]+ \|$' "$out/log.txt"
test -s "$out/contest.json"
echo passed
