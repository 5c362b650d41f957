// The communicator's counters against closed forms, with real processes: calls and bytes per
// kind of call (nccl-tests' sizes for collectives, the bytes moved for point-to-point), a
// group counting its own, and reset.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "collectives/communicator.h"
#include "tests/support/multiprocess.h"

namespace ringgrad::test {

using collectives::Buffer;
using collectives::CollKind;
using collectives::Communicator;
using collectives::ConstBuffer;
using collectives::DType;

TEST_CASE("stats: calls and bytes per kind, a group's apart from its parent's, and reset") {
  const auto results = run_ranks(2, [](const transport::Config& config) {
    Communicator comm(config, collectives::CommOptions{});
    std::vector<float> v(1000, 1.0f), gathered(20);
    for (int i = 0; i < 3; ++i)
      comm.all_reduce(ConstBuffer(v.data(), v.size(), DType::kFloat32), Buffer(v.data(), v.size(), DType::kFloat32),
                      collectives::ReduceOp::SUM);
    comm.all_gather(ConstBuffer(v.data(), 10, DType::kFloat32), Buffer(gathered.data(), 20, DType::kFloat32));
    std::vector<double> msg(2, 0.0);
    if (comm.rank() == 0) comm.send(ConstBuffer(msg.data(), 2, DType::kFloat64), 1);
    else comm.recv(Buffer(msg.data(), 2, DType::kFloat64), 0);
    auto group = comm.split(0, comm.rank());  // the split's all-gather counts on the parent
    group->barrier();
    const collectives::CommStats s = comm.stats(), g = group->stats();
    check(s.by_kind.at(CollKind::kAllReduce).calls == 3 && s.by_kind.at(CollKind::kAllReduce).bytes == 3 * 4000,
          s.describe());
    // all_gather: 1 of the split's own (3 int64 per rank, 48 bytes for 2) and 10 floats x 2 ranks.
    check(s.by_kind.at(CollKind::kAllGather).calls == 2 && s.by_kind.at(CollKind::kAllGather).bytes == 80 + 48, s.describe());
    const CollKind p2p = comm.rank() == 0 ? CollKind::kSend : CollKind::kRecv;
    check(s.by_kind.at(p2p).calls == 1 && s.by_kind.at(p2p).bytes == 16, s.describe());
    check(g.by_kind.size() == 1 && g.by_kind.at(CollKind::kBarrier).calls == 1, g.describe());
    check(s.total_bytes() == 12000 + 128 + 16, s.describe());
    comm.reset_stats();
    check(comm.stats().by_kind.empty(), comm.stats().describe());
  });
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
}

}  // namespace ringgrad::test
