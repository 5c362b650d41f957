#!/bin/sh
# Restarts that lose nothing: train_gpt on 2 ranks under ringgrad-run --max-restarts 2, with
# --save_every and --resume auto, has rank 1 killed with SIGKILL twice (at iteration 20, and
# after the restarted run reached 40); the job still exits 0, and its final checkpoint is byte
# for byte the checkpoint of a run that was never killed.
# Usage: restart_test.sh RINGGRAD_RUN TRAIN_GPT
set -eu
run=$1 train=$2
. "$(dirname "$0")/train_gpt_support.sh"
dir=$(mktemp -d)
killer=
trap '[ -n "$killer" ] && kill $killer 2>/dev/null; rm -rf "$dir"' EXIT
write_text "$dir/text.txt" "To be, or not to be, that is the question"
flags="--data $dir/text.txt --config baby --n_layer 2 --max_iters 80 --eval_interval 1000 --log_interval 20 --sample_tokens 0 --save_every 10"
"$run" --nproc-per-node 2 "$train" $flags --out "$dir/ref.safetensors" > "$dir/ref.log" 2>&1

# Kills rank 1 of the job writing run.safetensors once its log has a line matching $1.
kill_rank1_when() {
  while ! grep -q "$1" "$dir/run.log" 2>/dev/null; do sleep 0.02; done
  for p in $(pgrep -f "run.safetensors" || true); do
    if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx 'RANK=1'; then kill -KILL $p && echo "killed rank 1 (pid $p)"; fi
  done
}
(
  kill_rank1_when 'iter    20:'  # the checkpoint of iteration 20 is written
  kill_rank1_when 'iter    40:'  # printed only by the restarted run
) > "$dir/kills.log" 2>&1 &
killer=$!
status=0
"$run" --nproc-per-node 2 --max-restarts 2 "$train" $flags --out "$dir/run.safetensors" --resume auto > "$dir/run.log" 2>&1 || status=$?
wait $killer || true
killer=
cat "$dir/kills.log"
grep -E "restarting|resumed|giving up" "$dir/run.log" || true
grep -q "resumed from .* at iter [1-9]" "$dir/run.log"  # a restart continued mid-run, not from the start
test $status -eq 0
test "$(grep -c 'restarting all ranks' "$dir/run.log")" -eq 2
cmp "$dir/ref.safetensors" "$dir/run.safetensors"
echo "passed: killed twice, restarted twice, the final checkpoint equals the uninterrupted run's"
