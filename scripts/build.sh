#!/usr/bin/env bash
# Configures and builds ringgrad (Release, warnings as errors) into ./build on all cores.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DRINGGRAD_WERROR=ON "$@" >/dev/null
cmake --build build -j "$(nproc)"
