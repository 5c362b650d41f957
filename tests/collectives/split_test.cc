// Communicator::split with real processes: groups by color and key (and a rank in none), the
// groups of a 2 x 2 grid running collectives at the same time as the world from three threads
// on shared connections, a mismatch inside a group named on every member with its job ranks,
// and a dead rank failing every group it belongs to within the timeout.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <thread>
#include <unistd.h>
#include <vector>

#include "collectives/communicator.h"
#include "nn/parallel/grid/grid_groups.h"
#include "tests/support/multiprocess.h"

namespace ringgrad::test {
namespace {

using collectives::Buffer;
using collectives::CollectiveError;
using collectives::Communicator;
using collectives::ConstBuffer;
using collectives::DType;
using collectives::ReduceOp;
using nn::parallel::ProcessGrid;

void require_ok(const std::vector<RankResult>& results) {
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("split: groups by color, ordered by key then rank, and a negative color joins none") {
  // 6 ranks: color r % 2, except rank 5 (none); key 1 for ranks 0 and 1, else 0, so ranks 0
  // and 1 go last in their groups and ties keep the parent's order.
  require_ok(run_ranks(6, [](const transport::Config& config) {
    Communicator world(config, collectives::CommOptions{});
    const int r = world.rank();
    const int color = r == 5 ? -1 : r % 2, key = r < 2 ? 1 : 0;
    auto group = world.split(color, key);
    if (r == 5) return check(group == nullptr, "rank 5 passed a negative color but got a group");
    const std::vector<int> expected = color == 0 ? std::vector<int>{2, 4, 0} : std::vector<int>{3, 1};
    check(group->group().members == expected, fmt::format("rank {}: members {}", r, group->group().members));
    const int me = static_cast<int>(std::find(expected.begin(), expected.end(), r) - expected.begin());
    check(group->rank() == me && group->world_size() == static_cast<int>(expected.size()),
          fmt::format("rank {}: group rank {} of {}", r, group->rank(), group->world_size()));
    // all_gather of each member's job rank gives the members in group order; all_reduce their sum.
    int64_t mine = r;
    std::vector<int64_t> all(expected.size(), -1);
    group->all_gather(ConstBuffer(&mine, 1, DType::kInt64), Buffer(all.data(), all.size(), DType::kInt64));
    check(std::equal(all.begin(), all.end(), expected.begin()), fmt::format("rank {}: all_gather {}", r, all));
    int64_t sum = r;
    group->all_reduce(ConstBuffer(&sum, 1, DType::kInt64), Buffer(&sum, 1, DType::kInt64), ReduceOp::SUM);
    check(sum == std::accumulate(expected.begin(), expected.end(), 0), fmt::format("rank {}: sum {}", r, sum));
    // A group of a group: split the even group again (its rank 0 alone, the other two together).
    if (color == 0) {
      auto sub = group->split(group->rank() == 0 ? 0 : 1, 0);
      check(sub->world_size() == (group->rank() == 0 ? 1 : 2), "sub-group size");
      int64_t s = r;
      sub->all_reduce(ConstBuffer(&s, 1, DType::kInt64), Buffer(&s, 1, DType::kInt64), ReduceOp::SUM);
      check(s == (group->rank() == 0 ? 2 : 4), fmt::format("rank {}: sub-group sum {}", r, s));
    }
  }));
}

TEST_CASE("split: a 2 x 2 grid's groups, a copy of one and the world run at once from four threads") {
  // The world over TCP too, so every group shares its connections with the world, and the
  // row group's copy shares all of them with the row group: four streams interleave.
  collectives::CommOptions options;
  options.shared_memory = false;
  require_ok(run_ranks(4, [&](const transport::Config& config) {
    Communicator world(config, options);
    const ProcessGrid grid({{"row", 2}, {"col", 2}}, 4);
    // The group along "col" holds the ranks of one row; along "row", those of one column.
    auto row_group = nn::parallel::split_along(world, grid, "col");
    auto col_group = nn::parallel::split_along(world, grid, "row");
    auto row_copy = row_group->split(0, row_group->rank(), "row copy");
    const int r = world.rank();
    std::vector<std::string> errors(4);
    // Each thread all-reduces buffers of its own sizes; element i of rank q's is q * 1000 + i.
    auto run = [&](Communicator& comm, int slot, std::vector<int> job_ranks) {
      try {
        for (int k = 0; k < 30; ++k) {
          const std::size_t n = (k % 3 == 0) ? (std::size_t{1} << 18) + static_cast<std::size_t>(k) : static_cast<std::size_t>(k * 37 + slot);
          std::vector<int32_t> v(n);
          for (std::size_t i = 0; i < n; ++i) v[i] = r * 1000 + static_cast<int32_t>(i % 1000);
          comm.all_reduce(ConstBuffer(v.data(), n, DType::kInt32), Buffer(v.data(), n, DType::kInt32), ReduceOp::SUM);
          for (std::size_t i = 0; i < n; ++i) {
            int32_t want = 0;
            for (int q : job_ranks) want += q * 1000 + static_cast<int32_t>(i % 1000);
            if (v[i] != want) throw std::runtime_error(fmt::format("slot {} call {}: element {} is {}, expected {}", slot, k, i, v[i], want));
          }
        }
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(slot)] = e.what();
      }
    };
    std::thread a(run, std::ref(*row_group), 0, grid.group(r, "col"));
    std::thread b(run, std::ref(*col_group), 1, grid.group(r, "row"));
    std::thread c(run, std::ref(*row_copy), 3, grid.group(r, "col"));
    run(world, 2, {0, 1, 2, 3});
    a.join();
    b.join();
    c.join();
    for (const auto& e : errors) check(e.empty(), fmt::format("rank {}: {}", r, e));
  }));
}

TEST_CASE("split: a count mismatch inside a group is named on every member, with the group's job ranks") {
  require_ok(run_ranks(4, [](const transport::Config& config) {
    Communicator world(config, collectives::CommOptions{});
    const int r = world.rank();
    auto group = world.split(r == 0 ? -1 : 0, 0, "odd-one-out");  // job ranks 1, 2, 3
    if (!group) return;
    std::vector<float> v(group->rank() == 2 ? 5 : 4, 1.0f);  // job rank 3 passes 5 elements
    const std::string e = error_of([&] {
      group->all_reduce(ConstBuffer(v.data(), v.size(), DType::kFloat32), Buffer(v.data(), v.size(), DType::kFloat32), ReduceOp::SUM);
    });
    const std::string me = fmt::format("rank {} of group odd-one-out (job rank {}; the group is job ranks 1, 2, 3)", r - 1, r);
    check(e.find(me) != std::string::npos && e.find("count") != std::string::npos, fmt::format("rank {}: {}", r, e));
    // An argument error moves no data: the group still works.
    float one = 1.0f;
    group->all_reduce(ConstBuffer(&one, 1, DType::kFloat32), Buffer(&one, 1, DType::kFloat32), ReduceOp::SUM);
    check(one == 3.0f, fmt::format("rank {}: sum after the error {}", r, one));
  }));
}

TEST_CASE("split: a dead rank fails every group it is in, within the timeout") {
  RunOptions options;
  options.timeout = std::chrono::seconds(5);
  const auto results = run_ranks(4, [](const transport::Config& config) {
    Communicator world(config, collectives::CommOptions{});
    const ProcessGrid grid({{"row", 2}, {"col", 2}}, 4);
    auto row_group = nn::parallel::split_along(world, grid, "col");  // {0, 1}, {2, 3}
    auto col_group = nn::parallel::split_along(world, grid, "row");  // {0, 2}, {1, 3}
    const int r = world.rank();
    if (r == 3) ::_exit(3);  // dies after the splits
    const auto start = std::chrono::steady_clock::now();
    float x = 1.0f;
    // Ranks 1 and 2 share a group with rank 3; rank 0 does not, but the world has it.
    Communicator& with_dead = r == 1 ? *col_group : r == 2 ? *row_group : world;
    const std::string e = error_of([&] {
      with_dead.all_reduce(ConstBuffer(&x, 1, DType::kFloat32), Buffer(&x, 1, DType::kFloat32), ReduceOp::SUM);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    check(!e.empty(), fmt::format("rank {}: the all_reduce with dead rank 3 returned", r));
    check(s < 5.0, fmt::format("rank {}: threw after {:.1f} s, past the 5 s timeout: {}", r, s, e));
    if (r != 0) check(e.find("of group") != std::string::npos, fmt::format("rank {}: the error does not name the group: {}", r, e));
    // The world holds rank 3 too: it fails as well (the broken transport is shared).
    const std::string w = error_of([&] {
      world.all_reduce(ConstBuffer(&x, 1, DType::kFloat32), Buffer(&x, 1, DType::kFloat32), ReduceOp::SUM);
    });
    check(!w.empty(), fmt::format("rank {}: the world's all_reduce returned", r));
  }, options);
  INFO(describe(results));
  for (const auto& res : results) CHECK((res.rank == 3 ? res.exit_code == 3 : res.ok()));
}

}  // namespace ringgrad::test
