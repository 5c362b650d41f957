#!/bin/sh
# Flags a user can get wrong, each refused before any work with status 2 and the flag named:
# model sizes below 1 (a negative one once crashed in the allocator), probabilities outside
# [0, 1), NaN and infinite rates, output paths that cannot be written, --save_every without
# --out, a --resume checkpoint or a --data file that is not there; and a run that trains nothing
# leaves the checkpoint at --out as it was. A mistyped flag gets the closest known one ('-' and '_'
# alike). --tp/--pp/--cp without a launcher, or with a model they cannot split, or --device cuda with --cp, are refused once. The numbered examples end a failed rendezvous with one
# line and status 1, not an abort.
# Usage: bad_flags_test.sh BIN_DIR
set -eu
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
i=0
while [ $i -lt 300 ]; do echo "To be, or not to be, that is the question: $i"; i=$((i + 1)); done > "$dir/text.txt"
quick="--data $dir/text.txt --config tiny --max_iters 2 --sample_tokens 0"

# expect_usage "WHAT THE MESSAGE SAYS" PROGRAM ARGS...: status 2 and that message.
expect_usage() {
  said=$1
  shift
  status=0
  "$@" > "$dir/out.txt" 2>&1 || status=$?
  [ $status -eq 2 ] || fail "$* exited $status, not 2: $(cat "$dir/out.txt")"
  grep -qF -- "$said" "$dir/out.txt" || fail "$*: the message lacks '$said': $(cat "$dir/out.txt")"
}

expect_usage "--block_size: -1 is not a whole number >= 1" "$bin/train_gpt" $quick --block_size -1
expect_usage "--n_embd: 0 is not a whole number >= 1" "$bin/train_gpt" $quick --n_embd 0
expect_usage "--n_layer: -1 is not a whole number >= 1" "$bin/train_gpt" $quick --n_layer -1
expect_usage "--max_iters: -5 is not a whole number >= 0" "$bin/train_gpt" $quick --max_iters -5
expect_usage "--dropout: 1.5 is not a number in [0, 1)" "$bin/train_gpt" $quick --dropout 1.5
expect_usage "--lr: nan is not a number >= 0" "$bin/train_gpt" $quick --lr nan
expect_usage "--temperature: inf is not a number > 0" "$bin/train_gpt" $quick --temperature inf
expect_usage "--save_every 1 writes the checkpoint named by --out" "$bin/train_gpt" $quick --save_every 1
expect_usage "--log $dir/no/log.jsonl: there is no directory $dir/no" "$bin/train_gpt" $quick --log "$dir/no/log.jsonl"
expect_usage "--out $dir: is a directory, not a file" "$bin/train_gpt" $quick --out "$dir"
expect_usage "--trace $dir/no/t.json: there is no directory $dir/no" "$bin/train_gpt" $quick --trace "$dir/no/t.json"
! grep -q "^GPT " "$dir/out.txt" || fail "--trace was refused after the model was built: $(cat "$dir/out.txt")"
expect_usage "--resume $dir/none.safetensors: no such file" "$bin/train_gpt" $quick --resume "$dir/none.safetensors"
expect_usage "--resume $dir: is a directory, not a file" "$bin/train_gpt" $quick --resume "$dir"
expect_usage "/dev/null: not a regular file" "$bin/train_gpt" --data /dev/null --config tiny --max_iters 2
expect_usage "--lr: nan is not a number >= 0" "$bin/train_mlp" --lr nan
expect_usage "--batch-size: 0 is not a whole number >= 1" "$bin/train_mlp" --batch-size 0
expect_usage "--out $dir/no/mlp.safetensors: there is no directory" "$bin/train_mlp" --out "$dir/no/mlp.safetensors"
expect_usage "--trace $dir/no/t.json: there is no directory" "$bin/train_mlp" --trace "$dir/no/t.json"
expect_usage "--recompute: layers not in {attention,blocks,none}" "$bin/train_gpt" $quick --recompute layers
expect_usage "--recompute blocks is not available with --num_experts 4" "$bin/train_gpt" $quick --num_experts 4 --recompute blocks
expect_usage "--max-iter: did you mean --max_iters?" "$bin/train_gpt" $quick --max-iter 5
expect_usage "--batch_size: did you mean --batch-size?" "$bin/train_mlp" --batch_size 4
# Model parallelism without a launcher says how to start its ranks; a split the model cannot take
# is refused once, before any rank starts work.
expect_usage "--tp 2 --pp 2 needs 4 ranks (tp x pp x cp); start it with $bin/ringgrad-run --nproc-per-node 4 $bin/train_gpt" \
  env -u RANK -u OMPI_COMM_WORLD_RANK -u SLURM_PROCID "$bin/train_gpt" $quick --tp 2 --pp 2
expect_usage "--tp 3 splits the attention heads: n_head 4 does not divide into 3 tensor-parallel ranks" \
  "$bin/ringgrad-run" --nproc-per-node 3 "$bin/train_gpt" $quick --n_head 4 --tp 3
[ "$(grep -c "n_head 4 does not divide" "$dir/out.txt")" -eq 1 ] || fail "the n_head refusal is not said once: $(cat "$dir/out.txt")"
expect_usage "--pp 2 splits the blocks: n_layer 3 does not divide into 2 pipeline stages" \
  "$bin/ringgrad-run" --nproc-per-node 2 "$bin/train_gpt" $quick --n_layer 3 --pp 2
expect_usage "--device cuda with --cp (ring attention runs as CPU loops) is not available with --tp/--pp/--cp" \
  "$bin/ringgrad-run" --nproc-per-node 2 "$bin/train_gpt" $quick --cp 2 --device cuda
echo "bad flags: exit 2, named"

# A run that trains no step writes nothing over --out (it used to save its iteration-0 model).
text="--data $dir/text.txt --config tiny --sample_tokens 0"
"$bin/train_gpt" $text --max_iters 2 --out "$dir/ckpt.safetensors" > "$dir/out.txt" 2>&1 || fail "$(cat "$dir/out.txt")"
cp "$dir/ckpt.safetensors" "$dir/kept.safetensors"
"$bin/train_gpt" $text --max_iters 0 --out "$dir/ckpt.safetensors" > "$dir/out.txt" 2>&1 || fail "$(cat "$dir/out.txt")"
cmp -s "$dir/ckpt.safetensors" "$dir/kept.safetensors" || fail "a run of 0 steps rewrote --out"
echo "a run of no steps leaves --out as it was"

# A rank whose rendezvous fails: one line naming the example, status 1.
status=0
env RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=9 RINGGRAD_TIMEOUT=1 "$bin/02_all_reduce_by_hand" \
  > "$dir/out.txt" 2>&1 || status=$?
[ $status -eq 1 ] || fail "a failed rendezvous exited $status: $(cat "$dir/out.txt")"
grep -q "^02_all_reduce_by_hand: rank 1: " "$dir/out.txt" || fail "$(cat "$dir/out.txt")"
! grep -q "terminate called" "$dir/out.txt" || fail "$(cat "$dir/out.txt")"
echo "a failed rendezvous: one line, exit 1"
