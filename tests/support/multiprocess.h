// run_ranks: runs a function as N real processes (fork) on one machine, one per rank, each with
// a transport::Config pointing at a shared rendezvous port, and collects how each one ended.
// Call it before the test process creates any thread or Asio object: the children inherit it.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "transport/config.h"

namespace ringgrad::test {

/// How one rank's process ended.
struct RankResult {
  int rank = 0;
  int exit_code = -1;     // exit status, or -1 when killed by a signal
  int signal = 0;         // the signal that ended it, or 0
  std::string message;    // what the rank function threw (empty when it returned)
  bool ok() const { return exit_code == 0 && signal == 0; }
};

struct RunOptions {
  std::string master_addr = "127.0.0.1";
  /// Per-operation transport timeout handed to each rank in its Config.
  std::chrono::milliseconds timeout{std::chrono::seconds(20)};
  /// Every rank still running after this long is killed with SIGKILL and reported as failed.
  std::chrono::milliseconds deadline{std::chrono::seconds(60)};
  /// Runs in each child before the rank function (e.g. to enter a network namespace).
  std::function<void(int rank)> setup;
};

/// Forks world_size processes; child r calls fn(config) with config.rank = r, a free
/// master_port, a fresh job id and job token, then exits 0, or 1 after writing what fn threw.
/// Returns the results in rank order after every child ended. Inside fn use check(), not
/// Catch2's REQUIRE: an assertion must reach the parent through the exit status.
std::vector<RankResult> run_ranks(int world_size, const std::function<void(const transport::Config&)>& fn,
                                  const RunOptions& options = {});

/// A one-line summary of every rank's fate, for a failing test's message.
std::string describe(const std::vector<RankResult>& results);

/// Throws std::runtime_error(what) unless ok: the assertion to use inside a rank function.
void check(bool ok, const std::string& what);

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's choice of an ephemeral port).
uint16_t pick_free_port();

}  // namespace ringgrad::test
