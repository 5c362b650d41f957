#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
# Multi-process tests start several ranks each; two tests at a time keep a 2-core machine busy
# without starving any rank past its timeout.
ctest --test-dir build --output-on-failure -j 2 --timeout 600
