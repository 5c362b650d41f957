// Every collective x algorithm x dtype x op x count {0, 1, 7, 1000003} x in/out of place, for
// world sizes 1-5, with real processes on this host, checked against a serial reference: over
// shared memory by the fast link (the default here) and by the plain one, and over loopback
// TCP. One process group per (collective, world size, path) runs all its combinations: one
// ctest entry each.
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

// How host collectives travel: shared memory by ShmLink or PlainShmLink, or TCP.
enum class Path { kFastShm, kPlainShm, kTcp };

void sweep(CollKind kind, int p, Path by) {
  RunOptions options;
  options.deadline = std::chrono::seconds(170);
  const auto results = run_ranks(p, [&](const transport::Config& config) {
    collectives::CommOptions comm_options;
    comm_options.shared_memory = by != Path::kTcp;
    if (by == Path::kPlainShm) comm_options.shm_link = collectives::ShmLinkKind::kPlain;
    Communicator comm(config, comm_options);
    // One host: hier is the flat ring (tests/collectives/hierarchical_test.cc spans hosts).
    const std::vector<Algo> algos = {Algo::kRing, Algo::kTree, Algo::kHalvingDoubling, Algo::kOneShot, Algo::kLinear, Algo::kPairwise,
                                     Algo::kBruck};
    run_cases(comm, kind, algos);
    if (p > 1) {
      const std::string path = comm.host_path();
      const char* want = by == Path::kFastShm ? "shared memory" : by == Path::kPlainShm ? "shared memory (the plain link)" : "TCP";
      check(path.starts_with(want), fmt::format("rank {}: host path {}", comm.rank(), path));
    }
  }, options);
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
}

}  // namespace

#define RINGGRAD_SWEEP(name, kind)                                                                                 \
  TEST_CASE(#name ", world size 1", "[collectives]") { sweep(kind, 1, Path::kFastShm); }                             \
  TEST_CASE(#name ", world size 2", "[collectives]") { sweep(kind, 2, Path::kFastShm); }                             \
  TEST_CASE(#name ", world size 3", "[collectives]") { sweep(kind, 3, Path::kFastShm); }                             \
  TEST_CASE(#name ", world size 4", "[collectives]") { sweep(kind, 4, Path::kFastShm); }                             \
  TEST_CASE(#name ", world size 5", "[collectives]") { sweep(kind, 5, Path::kFastShm); }                             \
  TEST_CASE(#name ", world size 1, plain shared-memory link", "[collectives]") { sweep(kind, 1, Path::kPlainShm); } \
  TEST_CASE(#name ", world size 2, plain shared-memory link", "[collectives]") { sweep(kind, 2, Path::kPlainShm); } \
  TEST_CASE(#name ", world size 3, plain shared-memory link", "[collectives]") { sweep(kind, 3, Path::kPlainShm); } \
  TEST_CASE(#name ", world size 4, plain shared-memory link", "[collectives]") { sweep(kind, 4, Path::kPlainShm); } \
  TEST_CASE(#name ", world size 5, plain shared-memory link", "[collectives]") { sweep(kind, 5, Path::kPlainShm); } \
  TEST_CASE(#name ", world size 2, over TCP", "[collectives]") { sweep(kind, 2, Path::kTcp); }                       \
  TEST_CASE(#name ", world size 3, over TCP", "[collectives]") { sweep(kind, 3, Path::kTcp); }                       \
  TEST_CASE(#name ", world size 5, over TCP", "[collectives]") { sweep(kind, 5, Path::kTcp); }

RINGGRAD_SWEEP(all_reduce, CollKind::kAllReduce)
RINGGRAD_SWEEP(reduce, CollKind::kReduce)
RINGGRAD_SWEEP(broadcast, CollKind::kBroadcast)
RINGGRAD_SWEEP(all_gather, CollKind::kAllGather)
RINGGRAD_SWEEP(reduce_scatter, CollKind::kReduceScatter)
RINGGRAD_SWEEP(gather, CollKind::kGather)
RINGGRAD_SWEEP(scatter, CollKind::kScatter)
RINGGRAD_SWEEP(all_to_all, CollKind::kAllToAll)

}  // namespace ringgrad::test
