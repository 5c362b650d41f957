#!/bin/sh
# Checkpoints of expert parallelism hold one process's tensors: a GPT with 4 experts saved at
# iteration 8 under --ep 2 (2 processes, and ep 2 x dp 2 on 4) resumes on one process with
# --accumulation 2 (4) and prints the evaluations, losses and sample of an uninterrupted
# one-process run; a one-process checkpoint resumes under --ep 2 the same, each rank taking its
# experts. None of the resumes repeats the MoE flags: the checkpoint's config brings them, as
# --print_config shows them.
# Usage: train_gpt_ep_checkpoint_test.sh RINGGRAD_RUN TRAIN_GPT
set -eu
run=$1 train=$2
. "$(dirname "$0")/train_gpt_support.sh"
training_dir "Now is the winter of our discontent, made glorious summer"
base="--data $dir/text.txt --config tiny --log_interval 1 --eval_interval 8 --eval_iters 2 --sample_tokens 30"
moe="--num_experts 4 --moe_router_topk 2 --moe_expert_capacity_factor 1.0 --moe_aux_loss_coeff 0.01"
# from_iter8 FILE: the measurements from the evaluation at iteration 8 on.
from_iter8() { sed -n '/^eval iter *8:/,$p' "$1"; }
for m in 2 4; do
  "$train" $base $moe --max_iters 16 --accumulation $m | measurements > "$dir/one$m.txt"
  from_iter8 "$dir/one$m.txt" > "$dir/one${m}_after8.txt"
  "$run" --nproc-per-node $m "$train" $base $moe --ep 2 --max_iters 8 --out "$dir/ep$m.safetensors" > /dev/null
  "$train" $base --max_iters 16 --accumulation $m --resume "$dir/ep$m.safetensors" | measurements > "$dir/from_ep$m.txt"
  same_losses "one process, $m micro-batches, iterations 8-15" "$dir/one${m}_after8.txt" \
              "saved under --ep 2 on $m ranks at 8, resumed on one process" "$dir/from_ep$m.txt"
done
grep -q "sample" "$dir/from_ep2.txt"
"$train" $base $moe --max_iters 8 --accumulation 2 --out "$dir/one.safetensors" > /dev/null
"$run" --nproc-per-node 2 "$train" $base --ep 2 --max_iters 16 --resume "$dir/one.safetensors" | measurements > "$dir/from_one.txt"
same_losses "one process, 2 micro-batches, iterations 8-15" "$dir/one2_after8.txt" \
            "saved by one process at 8, resumed under --ep 2" "$dir/from_one.txt"
"$train" $base $moe --print_config > "$dir/config.json"
cat "$dir/config.json"
grep -q '"num_experts":4' "$dir/config.json"
grep -q '"moe_router_topk":2' "$dir/config.json"
echo "passed"
