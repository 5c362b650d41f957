#!/usr/bin/env bash
# Installs what is missing, builds, and trains the MLP on Fashion-MNIST.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
build/bin/train_mlp --data /usr/share/datasets/fashion-mnist --epochs 3 --batch-size 64 --hidden 256 \
  --log build/train_mlp.jsonl
