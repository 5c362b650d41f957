#!/usr/bin/env bash
# PyTorch's own distributed test suite (distributed_test.py's _DistTestBase, which ships with
# python3-torch) against a torch.distributed backend, on 2 and 3 ranks: tests/torch/distributed_suite.py.
#   scripts/torch_suite.sh [--backend ringgrad|gloo|ringgrad-as-gloo] [-k PATTERN ...] [--ranks "2 3"]
# Prints each failure with its first error line, then passed/failed/skipped and the wall time
# per world size; every test's outcome goes to build/torch_suite/BACKEND-N.json, and once both
# backends have run on N ranks, the tests that pass with gloo but not with ringgrad are listed.
# ringgrad-as-gloo runs ringgrad under gloo's name, for the tests the suite gates on that name
# (tests/torch/distributed_suite.py says which).
set -euo pipefail
cd "$(dirname "$0")/.."
backend=ringgrad ranks="2 3" patterns=()
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    -k) patterns+=(-k "$2"); shift 2 ;;
    *) echo "usage: scripts/torch_suite.sh [--backend ringgrad|gloo|ringgrad-as-gloo] [-k PATTERN ...] [--ranks \"2 3\"]" >&2; exit 2 ;;
  esac
done
case "$backend" in ringgrad|gloo|ringgrad-as-gloo) ;; *) echo "torch_suite: --backend $backend: ringgrad, gloo or ringgrad-as-gloo" >&2; exit 2 ;; esac
scripts/install_deps.sh python3-torch libtorch-dev pybind11-dev python3-dev
# Forget an earlier configure's "not found" for PyTorch's packages, so they are looked for again.
scripts/forget_not_found.sh Torch_DIR pybind11_DIR
scripts/build.sh ringgrad_torch
out=build/torch_suite
mkdir -p "$out"
status=0
for n in $ranks; do
  echo "$backend on $n ranks..."
  BACKEND=$backend WORLD_SIZE=$n PYTHONPATH=build/python \
    /usr/bin/python3 tests/torch/distributed_suite.py "${patterns[@]}" --json "$out/$backend-$n.json" \
    --compare "$out/gloo-$n.json" --compare "$out/ringgrad-$n.json" --compare "$out/ringgrad-as-gloo-$n.json" \
    2>"$out/$backend-$n.log" || status=1
done
exit $status
