// all_to_all_v with a different count for every pair of ranks, on 1-5 real processes over
// shared memory and TCP, against the serial reference; counts that disagree between a pair are
// one named error on every rank, and the communicator goes on.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <vector>

#include "collectives/communicator.h"
#include "tests/collectives/cases.h"
#include "tests/support/multiprocess.h"

namespace ringgrad::test {
namespace {

using namespace collectives;             // the communicator and its types, in this test file only

void sweep(int p, bool shared_memory) {
  RunOptions options;
  options.deadline = std::chrono::seconds(120);
  const auto results = run_ranks(p, [&](const transport::Config& config) {
    CommOptions comm_options;
    comm_options.shared_memory = shared_memory;
    Communicator comm(config, comm_options);
    for (DType dtype : kAllDTypes)
      for (std::size_t scale : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{100003}})
        run_all_to_all_v(comm, dtype, scale);
  }, options);
  INFO(describe(results));
  for (const auto& res : results) CHECK(res.ok());
}

}  // namespace

TEST_CASE("all_to_all_v, world sizes 1-5, equals the reference", "[collectives]") {
  for (int p = 1; p <= 5; ++p) sweep(p, true);
}

TEST_CASE("all_to_all_v over TCP, 3 ranks, equals the reference", "[collectives]") { sweep(3, false); }

TEST_CASE("all_to_all_v counts that disagree between two ranks are one named error on every rank", "[collectives]") {
  const auto results = run_ranks(3, [](const transport::Config& config) {
    Communicator comm(config, CommOptions{});
    const int r = comm.rank();
    std::vector<float> in(12, 1.0f), out(12, 0.0f);
    std::vector<std::size_t> send_counts = {2, 2, 2}, recv_counts = {2, 2, 2};
    if (r == 1) recv_counts = {3, 2, 1};  // expects 3 from rank 0 (which sends 2) and 1 from rank 2
    try {
      comm.all_to_all_v(Buffer{in.data(), 6, DType::kFloat32}, send_counts, Buffer{out.data(), 6, DType::kFloat32}, recv_counts);
      check(false, fmt::format("rank {}: mismatched counts ran", r));
    } catch (const CollectiveError& e) {
      const std::string what = e.what();
      check(what.find("invalid arguments on rank 1: rank 0 sends 2 elements, rank 1 expects 3; rank 2 sends 2 elements, "
                      "rank 1 expects 1") != std::string::npos,
            fmt::format("rank {}: {}", r, what));
    }
    // Nothing moved: the next call pairs up.
    recv_counts = {2, 2, 2};
    comm.all_to_all_v(Buffer{in.data(), 6, DType::kFloat32}, send_counts, Buffer{out.data(), 6, DType::kFloat32}, recv_counts);
    check(out[5] == 1.0f, fmt::format("rank {}: got {}", r, out[5]));
  });
  INFO(describe(results));
  for (const auto& res : results) CHECK(res.ok());
}

}  // namespace ringgrad::test
