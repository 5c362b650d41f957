#!/bin/sh
# A checkpoint records the vocabulary its ids stand for. Resumed on a text with as many distinct
# characters but another set of them ('q' swapped for 'z', as `tr q z` does), train_gpt refuses
# before any step with status 2, naming the checkpoint, both sizes and the characters; on its own
# text it resumes. So for a checkpoint of one process and one saved under a grid (--tp 2
# on 2 processes), each resumed on one process and on the grid.
# Usage: resume_vocab_test.sh RINGGRAD_RUN TRAIN_GPT
set -eu
run=$1 train=$2
. "$(dirname "$0")/train_gpt_support.sh"
training_dir "To be, or not to be, that is the question"
tr q z < "$dir/text.txt" > "$dir/swapped.txt"
fail() { echo "FAILED: $*"; exit 1; }
quick="--config tiny --sample_tokens 0"
# "To be, or not to be, that is the question: N": 16 characters, 10 digits and the newline.
refusal="trained on another vocabulary (27 characters; this text has 27): only in the checkpoint's: 'q'; only in this text's: 'z'"

# resume CKPT TEXT [LAUNCHER...]: train_gpt continued from CKPT on TEXT to 4 iterations,
# its status in $status and its output in $dir/out.txt.
resume() {
  ckpt=$1 text=$2
  shift 2
  status=0
  "$@" "$train" $quick --max_iters 4 --data "$text" --resume "$ckpt" > "$dir/out.txt" 2>&1 || status=$?
}

for saved_by in one grid; do
  ckpt="$dir/$saved_by.safetensors"
  if [ $saved_by = one ]; then
    "$train" $quick --max_iters 2 --data "$dir/text.txt" --out "$ckpt" > "$dir/out.txt" 2>&1 || fail "$(cat "$dir/out.txt")"
  else
    "$run" --nproc-per-node 2 "$train" $quick --max_iters 2 --tp 2 --data "$dir/text.txt" --out "$ckpt" > "$dir/out.txt" 2>&1 ||
      fail "$(cat "$dir/out.txt")"
  fi
  for resumed_by in one grid; do
    launcher=
    [ $resumed_by = grid ] && launcher="$run --nproc-per-node 2"
    what="saved by $saved_by, resumed by $resumed_by"
    resume "$ckpt" "$dir/swapped.txt" $launcher
    [ $status -eq 2 ] || fail "$what on another vocabulary exited $status, not 2: $(cat "$dir/out.txt")"
    grep -qF "$ckpt: $refusal" "$dir/out.txt" || fail "$what: the message lacks '$ckpt: $refusal': $(cat "$dir/out.txt")"
    ! grep -q "resumed from\|trained [0-9]* iterations" "$dir/out.txt" || fail "$what: trained before refusing: $(cat "$dir/out.txt")"
    resume "$ckpt" "$dir/text.txt" $launcher
    [ $status -eq 0 ] || fail "$what on its own text exited $status: $(cat "$dir/out.txt")"
    grep -q "resumed from $ckpt at iter 2" "$dir/out.txt" || fail "$what: $(cat "$dir/out.txt")"
    echo "$what: another vocabulary refused, its own resumed"
  done
done
echo "passed"
