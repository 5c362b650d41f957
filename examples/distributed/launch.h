// How the numbered examples that need several processes find their job: the ranks and the
// rendezvous from the environment ringgrad-run (or mpirun, or srun) sets. Started on its own,
// an example says how to start it and exits with status 2, as the *_perf tools do. An error
// later (a peer that died, a port in use) is printed once and ends the example with status 1.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "transport/config.h"
#include "transport/error.h"

namespace launch {

inline ringgrad::transport::Config job_or_exit(const char* program) {
  try {
    return ringgrad::transport::Config::from_env();
  } catch (const ringgrad::transport::TransportError& e) {
    fmt::print(stderr, "{}: {}\n{} runs on several processes; start it with\n"
                       "  build/bin/ringgrad-run --nproc-per-node 2 build/bin/{}\n", program, e.what(), program, program);
    std::exit(2);
  }
}

/// The handler of an example's `int main() try { ... }`: the error in one line, status 1 (not
/// std::terminate's abort and core dump).
inline int report(const char* program, const std::exception& e) {
  fmt::print(stderr, "{}: {}\n", program, e.what());
  return 1;
}

}  // namespace launch
