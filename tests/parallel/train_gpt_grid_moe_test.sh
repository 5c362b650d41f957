#!/bin/sh
# Mixture of experts on grids end to end in train_gpt, on a small generated text: a GPT with 4
# experts, top-2, a capacity factor of 1 and a load-balancing loss under --pp 2 (2 micro-batches,
# 2 processes), --tp 2 (2 processes) and --pp 2 x --tp 2 (4 processes) prints the evaluations,
# training losses and sample of one process that runs the same batch as the same micro-batches
# (--accumulation 2 against the pipeline's 2: routing, capacity and the load-balancing loss are
# per forward call); a pp 2 x tp 2 checkpoint resumes on one process with the grid's next losses.
# --pp 2 --ep 2 on 4 processes (dp 2, the experts sharded over both dp ranks of each stage) prints
# what one process prints with --accumulation 4 (the 2 replicas' 2 micro-batches each), and its
# checkpoint resumes on one process with the grid's next losses. --cp and --sp with experts, and
# --ep not dividing the dp group, are refused with a non-zero exit status, naming why.
# Usage: train_gpt_grid_moe_test.sh RINGGRAD_RUN TRAIN_GPT
set -eu
run=$1 train=$2
. "$(dirname "$0")/train_gpt_support.sh"
training_dir "Now is the winter of our discontent, made glorious summer"
model="--data $dir/text.txt --config tiny --eval_interval 8 --eval_iters 2 --sample_tokens 30"
base="$model --log_interval 5 --max_iters 16"
moe="--num_experts 4 --moe_router_topk 2 --moe_expert_capacity_factor 1.0 --moe_aux_loss_coeff 0.01"
"$train" $base $moe --accumulation 2 | measurements > "$dir/one2.txt"
"$run" --nproc-per-node 2 "$train" $base $moe --pp 2 --micro_batches 2 | measurements > "$dir/pp2.txt"
same_losses "one process, 2 micro-batches" "$dir/one2.txt" "--pp 2, 2 micro-batches" "$dir/pp2.txt"
"$run" --nproc-per-node 4 "$train" $base $moe --pp 2 --tp 2 --micro_batches 2 | measurements > "$dir/pptp.txt"
echo "--pp 2 --tp 2 on 4 ranks: the same"; cmp "$dir/one2.txt" "$dir/pptp.txt"
grep -q "^--- sample" "$dir/pptp.txt"
"$train" $base $moe | measurements > "$dir/one1.txt"
"$run" --nproc-per-node 2 "$train" $base $moe --tp 2 | measurements > "$dir/tp2.txt"
same_losses "one process" "$dir/one1.txt" "--tp 2 (experts whole on each rank)" "$dir/tp2.txt"
# Saved under pp 2 x tp 2 after iteration 10 (the experts whole in the one-process format),
# resumed on one process with 2 micro-batches: the grid's losses at 11 and 12.
grid="--pp 2 --tp 2 --micro_batches 2"
"$run" --nproc-per-node 4 "$train" $model $moe $grid --max_iters 11 --out "$dir/ckpt.safetensors" > /dev/null
"$run" --nproc-per-node 4 "$train" $model $moe $grid --max_iters 13 --log_interval 1 | losses | grep '^1[12] ' > "$dir/grid_next.txt"
"$train" $model $moe --accumulation 2 --max_iters 13 --log_interval 1 --resume "$dir/ckpt.safetensors" | losses > "$dir/resumed.txt"
same_losses "the grid at 11 and 12" "$dir/grid_next.txt" "one process resumed from the grid's checkpoint" "$dir/resumed.txt"
# Expert parallelism inside the grid's dp group: 4 ranks of --pp 2 are dp 2, the ep group.
epgrid="--pp 2 --ep 2 --micro_batches 2"
"$train" $base $moe --accumulation 4 | measurements > "$dir/one4.txt"
"$run" --nproc-per-node 4 "$train" $base $moe $epgrid | measurements > "$dir/ppep.txt"
echo "--pp 2 --ep 2 on 4 ranks: one process's 4 micro-batches"; cmp "$dir/one4.txt" "$dir/ppep.txt"
grep -q "^--- sample" "$dir/ppep.txt"
"$run" --nproc-per-node 4 "$train" $model $moe $epgrid --max_iters 11 --out "$dir/ep.safetensors" > /dev/null
"$run" --nproc-per-node 4 "$train" $model $moe $epgrid --max_iters 13 --log_interval 1 | losses | grep '^1[12] ' > "$dir/ep_next.txt"
"$train" $model $moe --accumulation 4 --max_iters 13 --log_interval 1 --resume "$dir/ep.safetensors" | losses > "$dir/ep_resumed.txt"
same_losses "--pp 2 --ep 2 at 11 and 12" "$dir/ep_next.txt" "one process resumed from its checkpoint" "$dir/ep_resumed.txt"
for refused in "--cp 2:not available with --cp" "--tp 2 --sp:not available with --sp" "--pp 2 --ep 2:does not divide the data-parallel group of 1"; do
  status=0
  "$run" --nproc-per-node 2 "$train" $base $moe ${refused%%:*} > "$dir/refused.txt" 2>&1 || status=$?
  cat "$dir/refused.txt"
  grep -q -- "${refused#*:}" "$dir/refused.txt"
  test $status -ne 0
done
echo "passed"
