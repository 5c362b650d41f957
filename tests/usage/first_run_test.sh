#!/bin/sh
# What a new user meets first, each checked: the numbered examples started without the launcher
# say how to start them (exit 2); train_gpt finds its default text from any working directory
# (in the repository it was built in), or names where it looked; a directory given as the
# text says so; demo.sh with a missing or wrong file stops at once, non-zero; a configuration
# error every rank finds is printed once under ringgrad-run; a --trace path that cannot be
# written is refused before training.
# Usage: first_run_test.sh SOURCE_DIR BIN_DIR
set -eu
src=$1 bin=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
i=0
while [ $i -lt 300 ]; do echo "To be, or not to be, that is the question: $i"; i=$((i + 1)); done > "$dir/text.txt"

# 1. The examples that need several processes, started alone. (No rank variables inherited.)
for example in 02_all_reduce_by_hand 06_tensor_parallel_mlp 07_pipeline_schedule 08_ring_attention 09_ring_all_reduce; do
  status=0
  env -u RANK -u WORLD_SIZE "$bin/$example" > "$dir/out.txt" 2>&1 || status=$?
  [ $status -eq 2 ] || fail "$example alone exited $status, not 2"
  grep -q "ringgrad-run --nproc-per-node 2 build/bin/$example" "$dir/out.txt" || fail "$example alone: $(cat "$dir/out.txt")"
done
echo "examples alone: exit 2 with the command to run"

# 2. The default text from elsewhere: a copy of the binary in <tree>/repo/build/bin finds
#    <tree>/repo/data/tinyshakespeare.txt wherever it is started; without it, names both places.
mkdir -p "$dir/tree/repo/build/bin" "$dir/tree/repo/data" "$dir/elsewhere"
cp "$bin/train_gpt" "$dir/tree/repo/build/bin/"
cp "$dir/text.txt" "$dir/tree/repo/data/tinyshakespeare.txt"
quick="--config tiny --max_iters 1 --eval_interval 1000 --eval_iters 1 --sample_tokens 0"
(cd "$dir/elsewhere" && "$dir/tree/repo/build/bin/train_gpt" $quick > "$dir/out.txt" 2>&1) || fail "default text not found: $(cat "$dir/out.txt")"
rm "$dir/tree/repo/data/tinyshakespeare.txt"
status=0
(cd "$dir/elsewhere" && "$dir/tree/repo/build/bin/train_gpt" $quick > "$dir/out.txt" 2>&1) || status=$?
[ $status -eq 2 ] || fail "no default text: exit $status"
grep -q "from $dir/elsewhere" "$dir/out.txt" || fail "the message does not name the working directory: $(cat "$dir/out.txt")"
grep -q "tree/repo/data/tinyshakespeare.txt (in the repository)" "$dir/out.txt" || fail "$(cat "$dir/out.txt")"
grep -q "pass --data PATH" "$dir/out.txt" || fail "$(cat "$dir/out.txt")"
echo "default text: found in the repository from another directory; named when missing"

# 3. A directory as the text.
status=0
"$bin/train_gpt" --data "$dir" $quick > "$dir/out.txt" 2>&1 || status=$?
[ $status -ne 0 ] || fail "a directory as --data was accepted"
grep -q "$dir: is a directory, not a file" "$dir/out.txt" || fail "$(cat "$dir/out.txt")"
echo "a directory as --data: named"

# 4. demo.sh with a missing file and with a directory: non-zero before installing or building.
for wrong in "$dir/no/such/file" "$dir"; do
  status=0
  "$src/scripts/demo.sh" "$wrong" > "$dir/out.txt" 2>&1 || status=$?
  [ $status -eq 2 ] || fail "demo.sh $wrong exited $status"
  grep -q "demo.sh: $wrong" "$dir/out.txt" || fail "$(cat "$dir/out.txt")"
  ! grep -q "building" "$dir/out.txt" || fail "demo.sh $wrong built before checking"
done
# A relative path is taken from where demo.sh was run, not from the checkout.
status=0
(cd "$dir" && "$src/scripts/demo.sh" no_such.txt) > "$dir/out.txt" 2>&1 || status=$?
[ $status -eq 2 ] || fail "demo.sh no_such.txt exited $status"
grep -q "demo.sh: $dir/no_such.txt: no such file" "$dir/out.txt" || fail "$(cat "$dir/out.txt")"
echo "demo.sh with a wrong file: exit 2 at once"

# 5. A batch that does not divide by the world size: every rank finds it, the user reads it once.
status=0
"$bin/ringgrad-run" --nproc-per-node 2 "$bin/train_gpt" --data "$dir/text.txt" --config tiny --batch_size 7 \
  > "$dir/out.txt" 2>&1 || status=$?
[ $status -eq 2 ] || fail "a bad batch exited $status"
[ "$(grep -c 'global batch 7 does not divide into 2 ranks' "$dir/out.txt")" -eq 1 ] || fail "$(cat "$dir/out.txt")"
echo "a configuration error on 2 ranks: printed once"

# 6. A timeline into a directory that does not exist: refused at the start on every rank, not
#    found by rank 0 after the traced steps (which left the other rank waiting a timeout).
status=0
timeout 60 "$bin/ringgrad-run" --nproc-per-node 2 "$bin/train_gpt" --data "$dir/text.txt" --config tiny --max_iters 8 \
  --trace "$dir/no/such/dir/t.json" > "$dir/out.txt" 2>&1 || status=$?
[ $status -eq 2 ] || fail "--trace into a missing directory exited $status: $(cat "$dir/out.txt")"
grep -q "there is no directory $dir/no/such/dir" "$dir/out.txt" || fail "$(cat "$dir/out.txt")"
echo "--trace into a missing directory: exit 2 at once"
echo "passed"
