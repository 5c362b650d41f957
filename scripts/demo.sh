#!/usr/bin/env bash
# Installs what is missing, builds what it runs, and trains across 2 local processes on real
# data: the MLP on Fashion-MNIST, then a short GPT run on Tiny Shakespeare.
#   scripts/demo.sh [TINYSHAKESPEARE_TXT]    (default data/tinyshakespeare.txt, in the repository)
set -euo pipefail
# A path given is taken from where the command was run; the default, from the checkout.
if [ $# -gt 0 ]; then case $1 in /*) text=$1 ;; *) text=$PWD/$1 ;; esac; fi
cd "$(dirname "$0")/.."
text=${text:-data/tinyshakespeare.txt}
if [ ! -f "$text" ]; then  # before anything is installed or built
  if [ -d "$text" ]; then echo "demo.sh: $text is a directory: pass the Tiny Shakespeare text file itself" >&2
  else echo "demo.sh: $text: no such file: pass the Tiny Shakespeare text file as the first argument" >&2; fi
  exit 2
fi
scripts/install_deps.sh
# Only what the demo runs, in the build the tests share (scripts/build.sh).
scripts/build.sh ringgrad-run train_mlp train_gpt
run="build/bin/ringgrad-run --nproc-per-node 2"

start=$SECONDS
echo "== MLP 784-256-10 on Fashion-MNIST, 2 processes, DDP (global batch 64 = 2 x 32)"
$run build/bin/train_mlp --data /usr/share/datasets/fashion-mnist --batch-size 64 --hidden 256 \
  --strategy ddp --log-every 300 --log build/demo_mlp.jsonl
echo "== MLP trained in $((SECONDS - start)) s"

start=$SECONDS
echo "== char-level GPT on $text, 2 processes, DDP, 300 iterations of the baby recipe"
$run build/bin/train_gpt --data "$text" --config baby --strategy ddp --max_iters 300 --lr_decay_iters 300 \
  --eval_interval 100 --log_interval 50 --sample_tokens 200 --log build/demo_gpt.jsonl
echo "== GPT trained in $((SECONDS - start)) s"
