#!/usr/bin/env bash
# Installs what is missing, builds, and trains across 2 local processes on real data: the MLP on
# Fashion-MNIST, then (when the text file is there) a short GPT run on Tiny Shakespeare.
#   scripts/demo.sh [TINYSHAKESPEARE_TXT]    (default ../shared/data/tinyshakespeare.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
text=${1:-../shared/data/tinyshakespeare.txt}
scripts/install_deps.sh
scripts/build.sh
run="build/bin/ringgrad-run --nproc-per-node 2"

echo "== MLP 784-256-10 on Fashion-MNIST, 2 processes, DDP (global batch 64 = 2 x 32)"
$run build/bin/train_mlp --data /usr/share/datasets/fashion-mnist --epochs 3 --batch-size 64 --hidden 256 \
  --strategy ddp --log-every 300 --log build/demo_mlp.jsonl

if [ -f "$text" ]; then
  echo "== char-level GPT on $text, 2 processes, DDP, 300 iterations of the baby recipe"
  $run build/bin/train_gpt --data "$text" --config baby --strategy ddp --max_iters 300 --lr_decay_iters 300 \
    --eval_interval 100 --log_interval 50 --sample_tokens 200 --log build/demo_gpt.jsonl
else
  echo "(no $text: skipping the GPT run; pass the Tiny Shakespeare file as the first argument)"
fi
