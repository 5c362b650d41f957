#!/bin/sh
# train_gpt on a dp 1 x pp 2 x tp 2 grid of 4 real processes prints the training losses one
# process prints (to the 4 decimals shown), on a small generated text, and so does dp 2 x tp 2
# with ZeRO-1 or FSDP inside its data-parallel groups; a checkpoint it saves
# resumes on one process with that process's losses; and a grid that does not divide the world
# is refused with exit status 2, naming the numbers.
# Usage: train_gpt_grid_test.sh RINGGRAD_RUN TRAIN_GPT
set -eu
run=$1 train=$2
. "$(dirname "$0")/train_gpt_support.sh"
training_dir "To be, or not to be, that is the question"
base="--data $dir/text.txt --config tiny --log_interval 5"
one="--eval_interval 1000 --sample_tokens 0"  # the one-process path evaluates and samples; the grid does not
grid="--tp 2 --pp 2 --micro_batches 2"
"$train" $base $one --max_iters 21 | losses > "$dir/one.txt"
"$run" --nproc-per-node 4 "$train" $base $grid --max_iters 21 | losses > "$dir/grid.txt"
same_losses "one process" "$dir/one.txt" "pp 2 x tp 2" "$dir/grid.txt"
# dp 2 x tp 2 with the sharded strategies inside the dp groups: the same losses.
for strategy in zero1 fsdp; do
  "$run" --nproc-per-node 4 "$train" $base --tp 2 --strategy $strategy --max_iters 21 | losses > "$dir/$strategy.txt"
  echo "dp 2 x tp 2, $strategy:"; cat "$dir/$strategy.txt"
  cmp "$dir/one.txt" "$dir/$strategy.txt"
done
# Saved on the grid after iteration 10, resumed on one process: that process's losses from there.
"$run" --nproc-per-node 4 "$train" $base $grid --max_iters 11 --out "$dir/ckpt.safetensors" > /dev/null
"$train" $base $one --max_iters 21 --resume "$dir/ckpt.safetensors" | losses > "$dir/resumed.txt"
echo "saved on the grid at 11, resumed on one process:"; cat "$dir/resumed.txt"
test -s "$dir/resumed.txt"
grep -E '^(15|20) ' "$dir/one.txt" | cmp - "$dir/resumed.txt"
status=0
"$run" --nproc-per-node 4 "$train" $base --tp 3 > "$dir/bad.txt" 2>&1 || status=$?
grep -q "tp 3 x --pp 1 x --cp 1 = 3 ranks per model replica does not divide the 4 ranks" "$dir/bad.txt"
test $status -ne 0
echo "passed"
