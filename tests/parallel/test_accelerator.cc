// The Accelerator joins the job its environment describes (as ringgrad-run sets it) and its
// small collectives give every rank the same answer: the mean, rank 0's value, every rank's value.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "nn/parallel/data_parallel/accelerator.h"
#include "tests/support/multiprocess.h"

using ringgrad::nn::parallel::Accelerator;
using ringgrad::test::check;
using ringgrad::test::describe;
using ringgrad::test::run_ranks;

TEST_CASE("the Accelerator's mean, broadcast_from_main and gather over 3 ranks launched by environment") {
  auto results = run_ranks(3, [](const ringgrad::transport::Config& config) {
    setenv("RANK", std::to_string(config.rank).c_str(), 1);
    setenv("WORLD_SIZE", std::to_string(config.world_size).c_str(), 1);
    setenv("MASTER_ADDR", config.master_addr.c_str(), 1);
    setenv("MASTER_PORT", std::to_string(config.master_port).c_str(), 1);
    setenv("RINGGRAD_JOB_ID", config.job_id.c_str(), 1);
    Accelerator acc;
    check(acc.rank() == config.rank && acc.world_size() == 3, fmt::format("rank {} of {}", acc.rank(), acc.world_size()));
    const double value = 10.0 + 2.0 * acc.rank();  // 10, 12, 14
    check(acc.mean(value) == 12.0, fmt::format("mean {}", acc.mean(value)));
    check(acc.broadcast_from_main(value) == 10.0, "broadcast_from_main is not rank 0's value");
    const std::vector<double> all = acc.gather(value);
    check(all == std::vector<double>{10.0, 12.0, 14.0}, fmt::format("gather gave {}", fmt::join(all, ", ")));
  });
  INFO(describe(results));
  for (const auto& r : results) REQUIRE(r.ok());
}
