#!/bin/sh
# The contest's flags on grids of real processes, end to end in train_gpt on a small generated
# text: Muon beside AdamW (each tensor-parallel matrix gathered and orthogonalised whole),
# rotary embeddings (under --cp each rank's positions turned by their index in the sequence),
# QK-norm and ReLU^2 under cp 2 x tp 2 and pp 2 x tp 2 print the training losses one process
# prints (to the 4 decimals shown); a checkpoint saved under tp 2 (x dp 2) with Muon resumes on
# one process with the grid's next losses.
# Usage: train_gpt_grid_contest_test.sh RINGGRAD_RUN TRAIN_GPT
set -eu
run=$1 train=$2
. "$(dirname "$0")/train_gpt_support.sh"
training_dir "Now is the winter of our discontent, made glorious summer"
base="--data $dir/text.txt --config tiny --log_interval 5 --eval_interval 1000 --sample_tokens 0"
flags="--optimizer muon --muon_lr 0.02 --rotary true --qk_norm true --relu_squared true --lr_schedule wsd"
"$train" $base $flags --max_iters 16 | losses > "$dir/one.txt"
for layout in "--cp 2 --tp 2" "--pp 2 --tp 2"; do
  "$run" --nproc-per-node 4 "$train" $base $flags $layout --max_iters 16 | losses > "$dir/grid.txt"
  same_losses "one process" "$dir/one.txt" "$layout (Muon, rotary, QK-norm, ReLU^2)" "$dir/grid.txt"
done
# Saved under dp 2 x tp 2 after iteration 10, resumed on one process: the grid's losses from there.
"$run" --nproc-per-node 4 "$train" $base $flags --tp 2 --max_iters 11 --out "$dir/ckpt.safetensors" > /dev/null
"$train" $base $flags --max_iters 16 --resume "$dir/ckpt.safetensors" | losses > "$dir/resumed.txt"
echo "saved under dp 2 x tp 2 at 11, resumed on one process:"; cat "$dir/resumed.txt"
test -s "$dir/resumed.txt"
grep -E '^15 ' "$dir/one.txt" | cmp - "$dir/resumed.txt"
echo "passed"
