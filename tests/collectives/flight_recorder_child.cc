// A rank program for the flight-recorder test: 1 MiB all-reduces in a loop; the rank named by
// STOP_RANK stops itself (SIGSTOP) after STOP_AFTER of them, so the others wait in the next one
// until their timeout.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include "collectives/communicator.h"

int main() {
  using namespace ringgrad::collectives;
  try {
    Communicator comm(ringgrad::transport::Config::from_env());
    const int stop_rank = std::atoi(std::getenv("STOP_RANK")), stop_after = std::atoi(std::getenv("STOP_AFTER"));
    std::vector<float> v(1 << 18, 1.0f);
    for (int i = 0; i < 1000; ++i) {
      if (comm.rank() == stop_rank && i == stop_after) ::raise(SIGSTOP);
      comm.all_reduce(ConstBuffer(v.data(), v.size(), DType::kFloat32), Buffer(v.data(), v.size(), DType::kFloat32),
                      ReduceOp::AVG);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
