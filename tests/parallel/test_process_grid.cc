// ProcessGrid's layout against closed forms: dp 2 x pp 2 x tp 2 (tp fastest), its groups and
// their numbering, a 1-dimension grid, and the errors for grids that do not fit the world.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "nn/parallel/grid/process_grid.h"

using ringgrad::nn::parallel::ProcessGrid;

TEST_CASE("a dp 2 x pp 2 x tp 2 grid puts tp on neighbouring ranks and dp 4 ranks apart") {
  const ProcessGrid grid({{"dp", 2}, {"pp", 2}, {"tp", 2}}, 8);
  for (int r = 0; r < 8; ++r) {
    INFO("rank " << r);
    CHECK(grid.coordinate(r, "tp") == r % 2);
    CHECK(grid.coordinate(r, "pp") == r / 2 % 2);
    CHECK(grid.coordinate(r, "dp") == r / 4);
    CHECK(grid.rank_at({r / 4, r / 2 % 2, r % 2}) == r);
    CHECK(grid.group(r, "tp") == std::vector<int>{r - r % 2, r - r % 2 + 1});
    CHECK(grid.group(r, "dp") == std::vector<int>{r % 4, r % 4 + 4});
  }
  CHECK(grid.group(5, "pp") == std::vector<int>{5, 7});
  // Groups numbered by their lowest rank: tp {0,1} {2,3} {4,5} {6,7}; dp {0,4} {1,5} {2,6} {3,7}.
  CHECK(grid.group_index(7, "tp") == 3);
  CHECK(grid.group_index(6, "dp") == 2);
  CHECK(grid.group_index(5, "pp") == 3);  // pp groups {0,2} {1,3} {4,6} {5,7}
  CHECK(grid.size("pp") == 2);
  CHECK(grid.describe().starts_with("dp 2 x pp 2 x tp 2\nrank 0: dp 0, pp 0, tp 0\n"));
}

TEST_CASE("a one-dimension grid is the whole world in one group") {
  const ProcessGrid grid({{"dp", 3}}, 3);
  CHECK(grid.group(1, "dp") == std::vector<int>{0, 1, 2});
  CHECK(grid.group_index(2, "dp") == 0);
}

TEST_CASE("grids that do not fit the world, and unknown dimensions, are named errors") {
  auto error = [](auto make) -> std::string {
    try {
      make();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  CHECK(error([] { ProcessGrid({{"dp", 2}, {"tp", 3}}, 8); }) == "process grid dp 2 x tp 3 holds 6 ranks, but the world has 8");
  CHECK(error([] { ProcessGrid({{"dp", 0}}, 0); }) == "process grid: dp has size 0: sizes start at 1");
  CHECK(error([] { ProcessGrid({{"tp", 2}, {"tp", 2}}, 4); }) == "process grid: dimension name 'tp' is empty or given twice");
  const ProcessGrid grid({{"dp", 2}, {"tp", 2}}, 4);
  CHECK(error([&] { grid.group(0, "cp"); }) == "process grid: no dimension 'cp' (it has dp, tp)");
  CHECK(error([&] { grid.coordinate(4, "dp"); }) == "process grid: rank 4 is not in [0, 4)");
  CHECK(error([&] { grid.rank_at({0, 2}); }) == "process grid: tp coordinate 2 is not in [0, 2)");
}
