// calibrate(): alpha and beta from ping-pong between ranks 0 and 1 (T(m) = alpha + m beta one
// way, from 8 B and 4 MiB round trips), gamma from a local 4 MiB float32 sum; rank 0's figures
// are broadcast so every rank picks the same algorithm.
#include <algorithm>
#include <chrono>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/cost_model.h"
#include "collectives/reduce/reduce_kernel.h"

namespace ringgrad::collectives {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Median one-way time of a `bytes` message between ranks 0 and 1 (others idle).
double one_way(Communicator& comm, std::vector<std::byte>& buf, std::size_t bytes, int reps) {
  const Buffer b{buf.data(), bytes, DType::kUInt8};
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    if (comm.rank() == 0) {
      comm.send(b, 1);
      comm.recv(b, 1);
    } else if (comm.rank() == 1) {
      comm.recv(b, 0);
      comm.send(b, 0);
    }
    times.push_back(seconds_since(t0) / 2);
  }
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  return times[static_cast<std::size_t>(reps / 2)];
}

}  // namespace

CostModel calibrate(Communicator& comm) {
  CostModel m = comm.options().model;
  constexpr std::size_t kLarge = 4 << 20;
  std::vector<std::byte> buf(kLarge);
  std::vector<float> a(kLarge / sizeof(float), 1.0f), b(a.size(), 2.0f);
  std::vector<double> gammas;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    combine(a.data(), a.data(), b.data(), a.size(), DType::kFloat32, ReduceOp::SUM);
    gammas.push_back(seconds_since(t0) / kLarge);
  }
  m.gamma = *std::min_element(gammas.begin(), gammas.end());
  comm.barrier();
  if (comm.world_size() > 1) {
    one_way(comm, buf, 8, 5);  // warm up the connection
    m.alpha = one_way(comm, buf, 8, 51);
    m.beta = std::max(1e-12, (one_way(comm, buf, kLarge, 9) - m.alpha) / kLarge);
  }
  double figures[3] = {m.alpha, m.beta, m.gamma};
  const Buffer f{figures, 3, DType::kFloat64};
  comm.broadcast(f, f, 0, Algo::kTree);
  m.alpha = figures[0];
  m.beta = figures[1];
  m.gamma = figures[2];
  comm.set_cost_model(m);
  return m;
}

}  // namespace ringgrad::collectives
