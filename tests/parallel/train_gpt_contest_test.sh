#!/bin/sh
# The contest's flags end to end in train_gpt, on a small generated text: Muon beside AdamW
# (sharded over the ranks, or on every rank), rotary embeddings, QK-norm, ReLU^2 and the WSD
# schedule on 2 real processes print the training losses one process prints (to the 4 decimals
# shown); a checkpoint saved on 2 ranks resumes on one process with that process's losses;
# --time_budget ends with the whole-split validation loss naming the seed and the budget;
# --print_config prints the preset as JSON; --optimizer muon under a sharded strategy,
# --muon_sharded without Muon and a resume with other architecture flags are refused with exit
# status 2, naming what to change.
# Usage: train_gpt_contest_test.sh RINGGRAD_RUN TRAIN_GPT
set -eu
run=$1 train=$2
. "$(dirname "$0")/train_gpt_support.sh"
training_dir "Now is the winter of our discontent, made glorious summer"
base="--data $dir/text.txt --config tiny --log_interval 5 --eval_interval 1000 --sample_tokens 0"
flags="--optimizer muon --muon_lr 0.02 --rotary true --qk_norm true --relu_squared true --lr_schedule wsd"
"$train" $base $flags --max_iters 21 | losses > "$dir/one.txt"
"$run" --nproc-per-node 2 "$train" $base $flags --max_iters 21 | losses > "$dir/two.txt"
same_losses "one process" "$dir/one.txt" "2 ranks (ddp, Muon sharded)" "$dir/two.txt"
"$run" --nproc-per-node 2 "$train" $base $flags --max_iters 21 --muon_sharded false > "$dir/every.log"
grep -q "every rank orthogonalising every matrix" "$dir/every.log"
losses < "$dir/every.log" > "$dir/every.txt"
same_losses "one process" "$dir/one.txt" "2 ranks (ddp, every rank orthogonalising every matrix)" "$dir/every.txt"
# Saved on 2 ranks after iteration 10, resumed on one process: that process's losses from there.
"$run" --nproc-per-node 2 "$train" $base $flags --max_iters 11 --out "$dir/ckpt.safetensors" > /dev/null
"$train" $base $flags --max_iters 21 --resume "$dir/ckpt.safetensors" | losses > "$dir/resumed.txt"
echo "saved on 2 ranks at 11, resumed on one process:"; cat "$dir/resumed.txt"
test -s "$dir/resumed.txt"
grep -E '^(15|20) ' "$dir/one.txt" | cmp - "$dir/resumed.txt"
# The same checkpoint under other architecture flags: refused by name.
status=0
"$train" $base --optimizer muon --rotary true --relu_squared true --lr_schedule wsd --max_iters 21 \
  --resume "$dir/ckpt.safetensors" > "$dir/mismatch.txt" 2>&1 || status=$?
cat "$dir/mismatch.txt" | tail -2
grep -q "the checkpoint was trained with --qk_norm true; pass --qk_norm true" "$dir/mismatch.txt"
test $status -ne 0
# A time budget: the whole-split loss, the seed and the budget in the last lines.
"$run" --nproc-per-node 2 "$train" $base $flags --time_budget 2 --seed 7 > "$dir/budget.txt"
grep -E "full val loss [0-9.]+ \(all [0-9]+ validation tokens once, windows of 32; seed 7, 2 s of training steps" "$dir/budget.txt"
# The preset as JSON, every choice in it.
"$train" --config speedrun --print_config > "$dir/config.json"
cat "$dir/config.json"
grep -q '"optimizer":"muon"' "$dir/config.json"
grep -q '"rotary":true' "$dir/config.json"
# Muon needs whole matrices: a sharded strategy is refused before anything starts.
status=0
"$train" $base --optimizer muon --strategy zero1 > "$dir/zero.txt" 2>&1 || status=$?
grep -q "optimizer muon orthogonalises whole gradient matrices: it needs --strategy ddp or ddp-naive" "$dir/zero.txt"
test $status -eq 2
# --muon_sharded without Muon: refused by name.
status=0
"$train" $base --muon_sharded false > "$dir/sharded.txt" 2>&1 || status=$?
grep -q "muon_sharded splits Muon's work: it needs --optimizer muon" "$dir/sharded.txt"
test $status -eq 2
echo "passed"
