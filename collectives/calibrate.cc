// calibrate(): alpha and beta from ping-pong between rank 0 and a peer (T(m) = alpha + m beta
// one way, from 8 B and 4 MiB round trips), once with a peer on another host and once with one
// on its own, over shared memory where 2 ranks' collectives take it; gamma from a local 4 MiB float32 sum; rank 0's figures are broadcast so every
// rank picks the same algorithm.
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

// Median one-way time of a `bytes` message between rank 0 and `peer` (others idle). Sends and
// receives always go over TCP, but the collectives of 2 ranks on one host through shared memory:
// there each way is a broadcast from one rank to the other (chain_broadcast: one message, in
// pieces), so the figures are those of the path the collectives take.
double one_way(Communicator& comm, std::vector<std::byte>& buf, std::size_t bytes, int reps, int peer) {
  const Buffer b{buf.data(), bytes, DType::kUInt8};
  const bool shared_memory = comm.world_size() == 2 && comm.host_path().starts_with("shared memory");
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    if (shared_memory) {
      comm.broadcast(b, b, 0, Algo::kRing);
      comm.broadcast(b, b, 1, Algo::kRing);
    } else if (comm.rank() == 0) {
      comm.send(b, peer);
      comm.recv(b, peer);
    } else if (comm.rank() == peer) {
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
  // The first rank on another host, and the first other rank on rank 0's own (-1: none).
  int remote = -1, local = -1;
  for (int q = 1; q < comm.world_size(); ++q) {
    const bool same_host = comm.hosts().host_of[static_cast<std::size_t>(q)] == comm.hosts().host_of[0];
    if (same_host && local < 0) local = q;
    if (!same_host && remote < 0) remote = q;
  }
  auto measure = [&](int peer, double& alpha, double& beta) {
    one_way(comm, buf, 8, 5, peer);  // warm up the connection
    alpha = one_way(comm, buf, 8, 51, peer);
    beta = std::max(1e-12, (one_way(comm, buf, kLarge, 9, peer) - alpha) / kLarge);
  };
  if (remote > 0) measure(remote, m.alpha, m.beta);
  if (local > 0) measure(local, m.alpha_local, m.beta_local);
  if (remote < 0) m.alpha = m.alpha_local, m.beta = m.beta_local;
  if (local < 0) m.alpha_local = m.alpha, m.beta_local = m.beta;
  double figures[5] = {m.alpha, m.beta, m.alpha_local, m.beta_local, m.gamma};
  const Buffer f{figures, 5, DType::kFloat64};
  comm.broadcast(f, f, 0, Algo::kTree);
  m.alpha = figures[0];
  m.beta = figures[1];
  m.alpha_local = figures[2];
  m.beta_local = figures[3];
  m.gamma = figures[4];
  comm.set_cost_model(m);
  return m;
}

}  // namespace ringgrad::collectives
