#!/usr/bin/env bash
# Forgets an earlier configure's "not found" for the named CMake cache entries (regular
# expressions), so the next configure looks for those packages again:
#   scripts/forget_not_found.sh 'MPI_[A-Za-z_]*' Gloo_DIR
# Each such entry goes with the comment lines above it (CMake would read a comment's next line,
# blank, as the entry).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/CMakeCache.txt ] || exit 0
names=$(IFS='|'; echo "$*")
awk -v names="^($names):.*NOTFOUND$" '
  /^\/\//     { help = help $0 "\n"; next }
  $0 !~ names { printf "%s%s\n", help, $0 }
              { help = "" }' build/CMakeCache.txt > build/CMakeCache.txt.new
mv build/CMakeCache.txt.new build/CMakeCache.txt
