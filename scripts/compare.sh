#!/usr/bin/env bash
# ringgrad beside PyTorch, gloo and Open MPI on the same work, from a fresh checkout: installs
# the optional Debian packages the peers need (saying which), configures the build so the gloo
# and MPI drivers exist, builds what it runs, then runs bench/compare/compare.py: interleaved
# rounds, one table with the machine named, JSON and SVG plots under bench/results/.
#   scripts/compare.sh [all|all_reduce|collectives|gpt|ddp|mlp|latency|contest|torch ...] [--rounds 3] [--data FILE]
#                      [--budget 300] [--isa avx2]   (latency: small all-reduces, contest: the fixed-time runs of
#                      docs/speedrun.md, and torch: PyTorch over ringgrad's torch backend beside gloo, not in all)
set -euo pipefail
cd "$(dirname "$0")/.."
/usr/bin/python3 bench/compare/compare.py --args-only "$@"  # a wrong argument stops here, before any install or build
# The peers' packages too (install_deps.sh names whatever it installs).
scripts/install_deps.sh python3-torch libgloo-dev openmpi-bin libopenmpi-dev
# Forget an earlier configure's "not found" for the peers' libraries, so they are looked for again.
scripts/forget_not_found.sh 'MPI_[A-Za-z_]*' Gloo_DIR Torch_DIR pybind11_DIR
# The torch section also needs ringgrad's torch backend, and what it is built from.
torch_backend=()
for a in "$@"; do
  [ "$a" = torch ] && torch_backend=(ringgrad_torch) && scripts/install_deps.sh libtorch-dev pybind11-dev python3-dev
done
scripts/build.sh ringgrad-run all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf all_to_all_perf \
  gloo_all_reduce_perf gemm_libraries train_gpt train_mlp "${torch_backend[@]}"
exec /usr/bin/python3 bench/compare/compare.py --build build "$@"
