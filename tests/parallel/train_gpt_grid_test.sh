#!/bin/sh
# train_gpt's one training loop on grids of real processes prints what one process prints (the
# losses, evaluations and whole-split loss to the 4 decimals shown, and the same sample), on a
# small generated text: dp 1 x pp 2 x tp 2 with evaluation, --accumulation 2 and --eval_full on,
# dp 2 x cp 2, and dp 2 x tp 2 with ZeRO-1 or FSDP inside its data-parallel groups. A checkpoint
# saved under pp 2 x tp 2 resumes on one process with the grid's next loss and the same sample;
# a grid that does not divide the world is refused with exit status 2, naming the numbers.
# Usage: train_gpt_grid_test.sh RINGGRAD_RUN TRAIN_GPT
set -eu
run=$1 train=$2
. "$(dirname "$0")/train_gpt_support.sh"
training_dir "To be, or not to be, that is the question"
model="--data $dir/text.txt --config tiny --eval_interval 10 --sample_tokens 60"
base="$model --log_interval 5"
"$train" $base --eval_full --max_iters 21 | measurements > "$dir/one.txt"
"$run" --nproc-per-node 4 "$train" $base --eval_full --tp 2 --pp 2 --micro_batches 2 --accumulation 2 --max_iters 21 |
  measurements > "$dir/grid.txt"
same_losses "one process" "$dir/one.txt" "pp 2 x tp 2, 2 micro-batches x 2 accumulation steps" "$dir/grid.txt"
grep -q "^eval iter    10" "$dir/grid.txt"
grep -q "^--- sample" "$dir/grid.txt"
# dp 2 x cp 2, and dp 2 x tp 2 with the sharded strategies inside the dp groups: the same.
"$train" $base --max_iters 21 | measurements > "$dir/one_short.txt"
for layout in "--cp 2" "--tp 2 --strategy zero1" "--tp 2 --strategy fsdp"; do
  "$run" --nproc-per-node 4 "$train" $base $layout --max_iters 21 | measurements > "$dir/layout.txt"
  echo "$layout on 4 ranks: the same"; cmp "$dir/one_short.txt" "$dir/layout.txt"
done
# Saved on the grid after iteration 10; resumed on one process: the grid's next loss (iteration
# 11, as the grid's uninterrupted run prints it) and, resumed at 11 with nothing to train, the
# grid's sample.
grid="--tp 2 --pp 2 --micro_batches 2"
"$run" --nproc-per-node 4 "$train" $base $grid --max_iters 11 --out "$dir/ckpt.safetensors" | measurements > "$dir/saved.txt"
"$train" $base --max_iters 11 --resume "$dir/ckpt.safetensors" | measurements > "$dir/resumed_at_11.txt"
sed -n '/^--- sample/,$p' "$dir/saved.txt" > "$dir/grid_sample.txt"
sed -n '/^--- sample/,$p' "$dir/resumed_at_11.txt" > "$dir/one_sample.txt"
same_losses "the grid's sample" "$dir/grid_sample.txt" "one process's, from the grid's checkpoint" "$dir/one_sample.txt"
"$run" --nproc-per-node 4 "$train" $model $grid --max_iters 13 --log_interval 1 | losses | grep '^1[12] ' > "$dir/grid_next.txt"
"$train" $model --max_iters 13 --log_interval 1 --resume "$dir/ckpt.safetensors" | losses > "$dir/resumed.txt"
same_losses "the grid at 11 and 12" "$dir/grid_next.txt" "one process resumed from the grid's checkpoint" "$dir/resumed.txt"
status=0
"$run" --nproc-per-node 4 "$train" $base --tp 3 > "$dir/bad.txt" 2>&1 || status=$?
grep -q "tp 3 x --pp 1 x --cp 1 = 3 ranks per model replica does not divide the 4 ranks" "$dir/bad.txt"
test $status -ne 0
echo "passed"
