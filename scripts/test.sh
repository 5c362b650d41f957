#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (or those its arguments, passed to
# ctest, select: scripts/test.sh -R collectives).
# Prints ctest's summary and each failure's output in full; each test's own line is cut to fit
# 100 columns (test names are Catch2 sentences, and ctest pads every line to the longest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
# Multi-process tests start several ranks each; two tests at a time keep a 2-core machine busy
# without starving any rank past its timeout. The "Start" lines are dropped (the result line
# names the test again); a result line keeps ctest's columns, its name cut to fit, except that a
# test which neither passed nor was skipped keeps its name whole. Other lines pass unchanged.
ctest --test-dir build --output-on-failure -j 2 --timeout 600 "$@" | awk -v columns=100 '
  /^ *Start +[0-9]+: / { next }
  match($0, /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: /) {
    head = substr($0, 1, RLENGTH); rest = substr($0, RLENGTH + 1)
    if (match(rest, / \.\.\.+(   Passed|\*\*\*)/)) {
      name = substr(rest, 1, RSTART - 1); status = substr(rest, RSTART + 1)
      sub(/^\.+/, "", status)
      if (status !~ /^(   Passed|\*\*\*Skipped)/) { print head name " " status; fflush(); next }
      room = columns - length(head) - length(status)
      if (length(name) > room) name = substr(name, 1, room - 3) "..."
      printf "%s%-" room "s%s\n", head, name, status; fflush(); next
    }
  }
  { print; fflush() }'
