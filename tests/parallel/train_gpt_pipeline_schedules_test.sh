#!/bin/sh
# train_gpt under the interleaved 1F1B and ZB-H1 pipeline schedules (pp 2, a 4-layer model, 2
# micro-batches; interleaved with 2 virtual stages per stage) prints what one process prints:
# the losses, the evaluations and the sample. Refused on every rank before any trains, naming
# the numbers: virtual stages that do not divide the layers, micro-batches not a multiple of the
# stages under interleaved, --virtual_stages without interleaved.
# Usage: train_gpt_pipeline_schedules_test.sh RINGGRAD_RUN TRAIN_GPT
set -eu
run=$1 train=$2
. "$(dirname "$0")/train_gpt_support.sh"
training_dir "Is this a dagger which I see before me"
model="--data $dir/text.txt --config tiny"
base="$model --n_layer 4 --eval_interval 10 --sample_tokens 40 --log_interval 5 --max_iters 21"
"$train" $base | measurements > "$dir/one.txt"
for schedule in "interleaved --virtual_stages 2" "zb-h1"; do
  "$run" --nproc-per-node 2 "$train" $base --pp 2 --micro_batches 2 --pp_schedule $schedule | measurements > "$dir/pp.txt"
  same_losses "one process" "$dir/one.txt" "pp 2, --pp_schedule $schedule" "$dir/pp.txt"
done
# refused FLAGS MESSAGE: a non-zero exit status and MESSAGE (every rank checks the options before
# any starts work; the launcher stops the others when the first exits with 2).
refused() {
  status=0
  "$run" --nproc-per-node 2 "$train" $model --pp 2 $1 > "$dir/bad.txt" 2>&1 || status=$?
  echo "$1: status $status"
  test $status -ne 0
  grep -q -- "$2" "$dir/bad.txt"
}
refused "--n_layer 6 --pp_schedule interleaved --virtual_stages 2 --micro_batches 2" \
  "pp 2 x --virtual_stages 2 cuts the blocks into 4 model chunks: n_layer 6 does not divide into them"
refused "--n_layer 4 --pp_schedule interleaved --virtual_stages 2 --micro_batches 3" \
  "micro-batches (--micro_batches 3 x --accumulation 1 = 3) to be a multiple of --pp 2"
refused "--pp_schedule 1f1b --virtual_stages 2" "virtual_stages 2 needs --pp_schedule interleaved"
echo "passed"
