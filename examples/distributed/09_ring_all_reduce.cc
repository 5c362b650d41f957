// 09: a ring all-reduce written by hand, on one screen, over batched send/recv. p ranks each
// hold n floats cut into p blocks. Reduce-scatter: at step s rank r sends block (r - 1 - s) to
// rank r+1 and adds what rank r-1 sends, its block (r - 2 - s), into its own; after p-1 steps
// rank r holds block r summed over every rank (docs/collectives.md draws it). All-gather: p-1
// more steps pass the finished blocks on.
// Each rank sends 2(p-1)/p n floats, the least any all-reduce can (Patarasuk & Yuan 2009).
// The library's version, pipelined in pieces: collectives/algorithms/ring_all_reduce.cc.
//
//   build/bin/ringgrad-run --nproc-per-node 3 build/bin/09_ring_all_reduce
#include <fmt/format.h>

#include <vector>

#include "collectives/communicator.h"
#include "examples/distributed/launch.h"

using namespace ringgrad::collectives;

int main() try {
  Communicator comm(launch::job_or_exit("09_ring_all_reduce"));
  const int p = comm.world_size(), r = comm.rank(), next = (r + 1) % p, prev = (r + p - 1) % p;
  constexpr std::size_t kBlock = 4;  // floats a block: n = p * kBlock
  std::vector<float> x(static_cast<std::size_t>(p) * kBlock), incoming(kBlock);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(100 * r + i);  // rank r's data
  const std::vector<float> mine = x;
  const auto block = [&](int b) { return x.data() + static_cast<std::size_t>((b % p + p) % p) * kBlock; };

  for (int s = 0; s < p - 1; ++s) {  // reduce-scatter
    comm.batch_send_recv({P2POp::send(ConstBuffer(block(r - 1 - s), kBlock, DType::kFloat32), next),
                          P2POp::recv(Buffer(incoming.data(), kBlock, DType::kFloat32), prev)});
    float* acc = block(r - 2 - s);
    for (std::size_t i = 0; i < kBlock; ++i) acc[i] += incoming[i];
    if (r == 0) fmt::print("reduce-scatter step {}: sent block {}, added block {}\n", s, (2 * p - 1 - s) % p, (2 * p - 2 - s) % p);
  }
  for (int s = 0; s < p - 1; ++s) {  // all-gather: pass on the block finished last
    comm.batch_send_recv({P2POp::send(ConstBuffer(block(r - s), kBlock, DType::kFloat32), next),
                          P2POp::recv(Buffer(block(r - 1 - s), kBlock, DType::kFloat32), prev)});
  }

  std::vector<float> expected = mine;  // the library's all-reduce of the same data
  comm.all_reduce(ConstBuffer(mine.data(), mine.size(), DType::kFloat32),
                  Buffer(expected.data(), expected.size(), DType::kFloat32), ReduceOp::SUM);
  const bool same = x == expected;
  fmt::print("rank {}: by hand [{}, {}, ..., {}]; equal to comm.all_reduce: {}\n", r, x.front(), x[1], x.back(),
             same ? "yes" : "NO");
  return same ? 0 : 1;
} catch (const std::exception& e) {
  return launch::report("09_ring_all_reduce", e);
}
