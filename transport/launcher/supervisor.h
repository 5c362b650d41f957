// Supervisor: runs the local ranks of a job as child processes, prefixes every line they print
// with "[rank N] ", and stops them all (SIGTERM, then SIGKILL after a grace period) as soon as
// one fails or the launcher is interrupted.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace ringgrad::launcher {

struct RankSpec {
  int rank = 0;                   // global rank, for the prefix and the report
  std::vector<std::string> env;   // "NAME=value" added to the launcher's environment
  std::vector<int> cpus;          // the CPUs it may run on; empty: those the launcher may
};

/// Starts `command` once per spec and supervises until all have exited. Returns the launcher's
/// exit code: 0 when every rank exited 0; else the first failing rank's exit code, or 128 + its
/// signal; 130 when interrupted. Writes what happened to stderr. Throws std::system_error when a
/// child cannot be started.
int supervise(const std::vector<std::string>& command, const std::vector<RankSpec>& ranks, std::chrono::milliseconds grace);

}  // namespace ringgrad::launcher
