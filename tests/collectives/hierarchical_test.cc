// The hierarchical all-reduce across two "hosts" (network namespaces joined by a veth pair) of
// two ranks each: the ranks find the layout, keep off shared memory, and the hierarchical
// result equals the flat ring's and the serial reference for every dtype, op and count. The
// cost model's choice between them is checked against its closed forms.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <vector>

#include "collectives/communicator.h"
#include "collectives/reference.h"
#include "tests/support/multiprocess.h"
#include "tests/support/netns.h"

namespace ringgrad::test {

using namespace collectives;             // the communicator and its types, in this test file only
using namespace collectives::reference;  // inputs and serial results to compare with

TEST_CASE("hierarchical all_reduce over 2 namespace hosts x 2 ranks equals the flat ring and the reference",
          "[collectives]") {
  const std::string name = fmt::format("rh{}", ::getpid() % 100000);
  const std::string subnet = fmt::format("10.201.{}", ::getpid() % 250 + 1);
  NetnsPair netns(name, subnet);
  if (!netns.ok()) {
    WARN("skipped: cannot create network namespaces and a veth pair here (needs root and iproute2)");
    return;
  }
  RunOptions options;
  options.master_addr = netns.address('a');
  options.deadline = std::chrono::seconds(170);
  options.setup = [&](int rank) { enter_netns(netns.name(rank < 2 ? 'a' : 'b')); };  // ranks 0, 1 on a; 2, 3 on b
  const auto results = run_ranks(4, [&](const transport::Config& config) {
    Communicator comm(config, collectives::CommOptions{});
    const int p = comm.world_size(), r = comm.rank();
    check(comm.hosts().host_of == std::vector<int>{0, 0, 1, 1},
          fmt::format("rank {}: host layout {}", r, fmt::join(comm.hosts().host_of, " ")));
    for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kInt32, DType::kFloat64})
      for (ReduceOp op : {ReduceOp::SUM, ReduceOp::AVG, ReduceOp::MAX})
        for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000003}})
          for (bool in_place : {false, true}) {
            const std::size_t es = collectives::dtype_size(dtype);
            std::vector<std::byte> in = make_input(r, n, op, dtype), out(n * es, std::byte{0xAB});
            std::vector<std::byte>& hier = in_place ? in : out;
            comm.all_reduce(Buffer{in.data(), n, dtype}, Buffer{hier.data(), n, dtype}, op, Algo::kHierarchical);
            std::vector<std::byte> flat = make_input(r, n, op, dtype);
            comm.all_reduce(Buffer{flat.data(), n, dtype}, Buffer{flat.data(), n, dtype}, op, Algo::kRing);
            const auto want = expected_output(CollKind::kAllReduce, p, r, n, op, dtype, 0);
            const std::string what = fmt::format("rank {}: {} {} n={} {}", r, collectives::dtype_name(dtype),
                                                 collectives::reduce_op_name(op), n, in_place ? "in place" : "out of place");
            check(first_difference(hier.data(), want.data(), n, dtype) < 0, what + ": hierarchical differs from the reference");
            check(first_difference(flat.data(), want.data(), n, dtype) < 0, what + ": ring differs from the reference");
          }
    check(comm.host_path().starts_with("TCP (the ranks are on 2 hosts)"), fmt::format("rank {}: host path {}", r, comm.host_path()));
  }, options);
  INFO(describe(results));
  for (const auto& res : results) CHECK(res.ok());
}

TEST_CASE("the cost model takes hierarchical only across hosts whose links are slower", "[collectives]") {
  collectives::CostModel m;  // equal links inside and between hosts
  const std::size_t n = 16 << 20;
  const double nb = static_cast<double>(n);
  // 2 hosts x 2 ranks: 4 alpha + (n/2 + n/2) beta_local + (n/2 + n/2) beta + reductions.
  const double hier = 2 * m.alpha_local + nb * m.beta_local + 0.5 * nb * m.gamma + 2 * m.alpha + nb * m.beta +
                      0.25 * nb * m.gamma;
  CHECK(m.predict(CollKind::kAllReduce, Algo::kHierarchical, n, 4, 2) == Approx(hier));
  CHECK(m.choose(CollKind::kAllReduce, n, 4, 2) != Algo::kHierarchical);  // flat moves 1.5 n, hier 2 n on equal links
  m.beta = 10 * m.beta_local;  // a network 10x slower than the host's memory path
  CHECK(m.choose(CollKind::kAllReduce, n, 4, 2) == Algo::kHierarchical);
  CHECK(m.choose(CollKind::kAllReduce, n, 4, 1) != Algo::kHierarchical);  // one host: never
  // On one host hier runs the ring, and is predicted so (the ring wins the tie).
  CHECK(m.predict(CollKind::kAllReduce, Algo::kHierarchical, n, 4, 1) == m.predict(CollKind::kAllReduce, Algo::kRing, n, 4, 1));
}

}  // namespace ringgrad::test
