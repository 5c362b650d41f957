#!/usr/bin/env bash
# Installs the Debian packages ringgrad needs, and those named as arguments (scripts/compare.sh's
# peers), skipping those already present. Needs root or sudo only when something is missing.
# Prints one line with its time; apt's output goes to build/logs/install.log.
#   scripts/install_deps.sh [PACKAGE ...]
set -euo pipefail

packages=(
  cmake g++ make
  libasio-dev libfmt-dev catch2 libcli11-dev nlohmann-json3-dev
  libopenblas-dev libdnnl2 zlib1g-dev
  dataset-fashion-mnist
  iproute2
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

cd "$(dirname "$0")/.."
mkdir -p build/logs
log=build/logs/install.log
plural=s
[ ${#missing[@]} -eq 1 ] && plural=""
printf 'installing %d package%s (%s)... ' "${#missing[@]}" "$plural" "${missing[*]}"
start=$SECONDS
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"; } > "$log" 2>&1; then
  echo "FAILED after $((SECONDS - start)) s; the last lines of $log:"
  tail -20 "$log"
  exit 1
fi
echo "$((SECONDS - start)) s"
