// How the numbered examples that need several processes find their job: the ranks and the
// rendezvous from the environment ringgrad-run (or mpirun, or srun) sets. Started on its own,
// an example says how to start it and exits with status 2, as the *_perf tools do.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

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

}  // namespace launch
