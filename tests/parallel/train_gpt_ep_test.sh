#!/bin/sh
# Expert parallelism end to end in train_gpt, on a small generated text: a GPT with 4 experts,
# top-2 and a capacity factor of 1 under --ep 2 (2 processes) and --ep 2 on 4 processes (ep 2 x
# dp 2) prints the evaluations, training losses and sample of one process that runs the same
# global batch as 2 or 4 --accumulation micro-batches (routing, capacity and the load-balancing
# loss are per forward call); experts that do not divide over --ep and --ep with a sharded
# strategy are refused with exit status 2, naming the numbers.
# Usage: train_gpt_ep_test.sh RINGGRAD_RUN TRAIN_GPT
set -eu
run=$1 train=$2
. "$(dirname "$0")/train_gpt_support.sh"
training_dir "Now is the winter of our discontent, made glorious summer"
base="--data $dir/text.txt --config tiny --log_interval 5 --max_iters 16 --eval_interval 8 --eval_iters 2 --sample_tokens 30"
moe="--num_experts 4 --moe_router_topk 2 --moe_expert_capacity_factor 1.0 --moe_aux_loss_coeff 0.01"
"$train" $base $moe --accumulation 2 | measurements > "$dir/one2.txt"
"$run" --nproc-per-node 2 "$train" $base $moe --ep 2 | measurements > "$dir/ep2.txt"
same_losses "one process, 2 micro-batches" "$dir/one2.txt" "--ep 2 on 2 ranks" "$dir/ep2.txt"
"$train" $base $moe --accumulation 4 | measurements > "$dir/one4.txt"
"$run" --nproc-per-node 4 "$train" $base $moe --ep 2 | measurements > "$dir/ep2dp2.txt"
same_losses "one process, 4 micro-batches" "$dir/one4.txt" "--ep 2 on 4 ranks (ep 2 x dp 2)" "$dir/ep2dp2.txt"
grep -q "sample" "$dir/ep2dp2.txt"
status=0
"$train" $base --num_experts 6 --ep 4 > "$dir/odd.txt" 2>&1 || status=$?
cat "$dir/odd.txt"
grep -q "num_experts 6 (not divisible into 4 expert-parallel ranks)" "$dir/odd.txt"
test $status -eq 2
status=0
"$train" $base $moe --ep 2 --strategy zero1 > "$dir/zero.txt" 2>&1 || status=$?
grep -q "strategy zero1" "$dir/zero.txt"
test $status -eq 2
echo "passed"
