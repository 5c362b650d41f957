// Every collective x algorithm x dtype x op x count {0, 1, 7, 1000003} x in/out of place, for
// world sizes 1-5, with real processes on this host, checked against a serial reference: over
// shared memory (the default here) and over loopback TCP. One process group per (collective,
// world size, path) runs all its combinations: one ctest entry each.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <vector>

#include "collectives/communicator.h"
#include "tests/collectives/cases.h"
#include "tests/support/multiprocess.h"

namespace ringgrad::test {
namespace {

using collectives::Algo;
using collectives::CollKind;
using collectives::Communicator;

void sweep(CollKind kind, int p, bool shared_memory) {
  RunOptions options;
  options.deadline = std::chrono::seconds(170);
  const auto results = run_ranks(p, [&](const transport::Config& config) {
    collectives::CommOptions comm_options;
    comm_options.shared_memory = shared_memory;
    Communicator comm(config, comm_options);
    // One host: hier is the flat ring (tests/collectives/hierarchical_test.cc spans hosts).
    const std::vector<Algo> algos = {Algo::kRing, Algo::kTree, Algo::kHalvingDoubling, Algo::kOneShot, Algo::kLinear, Algo::kPairwise,
                                     Algo::kBruck};
    run_cases(comm, kind, algos);
    if (p > 1) {
      const std::string path = comm.host_path();
      check(path.starts_with(shared_memory ? "shared memory" : "TCP"), fmt::format("rank {}: host path {}", comm.rank(), path));
    }
  }, options);
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
}

}  // namespace

#define RINGGRAD_SWEEP(name, kind)                                                          \
  TEST_CASE(#name ", world size 1", "[collectives]") { sweep(kind, 1, true); }                  \
  TEST_CASE(#name ", world size 2", "[collectives]") { sweep(kind, 2, true); }                  \
  TEST_CASE(#name ", world size 3", "[collectives]") { sweep(kind, 3, true); }                  \
  TEST_CASE(#name ", world size 4", "[collectives]") { sweep(kind, 4, true); }                  \
  TEST_CASE(#name ", world size 5", "[collectives]") { sweep(kind, 5, true); }                  \
  TEST_CASE(#name ", world size 2, over TCP", "[collectives]") { sweep(kind, 2, false); }       \
  TEST_CASE(#name ", world size 3, over TCP", "[collectives]") { sweep(kind, 3, false); }       \
  TEST_CASE(#name ", world size 5, over TCP", "[collectives]") { sweep(kind, 5, false); }

RINGGRAD_SWEEP(all_reduce, CollKind::kAllReduce)
RINGGRAD_SWEEP(reduce, CollKind::kReduce)
RINGGRAD_SWEEP(broadcast, CollKind::kBroadcast)
RINGGRAD_SWEEP(all_gather, CollKind::kAllGather)
RINGGRAD_SWEEP(reduce_scatter, CollKind::kReduceScatter)
RINGGRAD_SWEEP(gather, CollKind::kGather)
RINGGRAD_SWEEP(scatter, CollKind::kScatter)
RINGGRAD_SWEEP(all_to_all, CollKind::kAllToAll)

}  // namespace ringgrad::test
