// DistributedSampler has PyTorch's semantics: 10 samples over 3 ranks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "nn/data/distributed_sampler.h"

using ringgrad::nn::data::DistributedSampler;
using Indices = std::vector<std::int64_t>;

TEST_CASE("without shuffle: exact index lists, padded from the start or dropped") {
  // PyTorch: list(DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False))
  REQUIRE(DistributedSampler(10, 3, 0, false).indices() == Indices{0, 3, 6, 9});
  REQUIRE(DistributedSampler(10, 3, 1, false).indices() == Indices{1, 4, 7, 0});
  REQUIRE(DistributedSampler(10, 3, 2, false).indices() == Indices{2, 5, 8, 1});
  // ... and with drop_last=True
  REQUIRE(DistributedSampler(10, 3, 0, false, 0, true).indices() == Indices{0, 3, 6});
  REQUIRE(DistributedSampler(10, 3, 1, false, 0, true).indices() == Indices{1, 4, 7});
  REQUIRE(DistributedSampler(10, 3, 2, false, 0, true).indices() == Indices{2, 5, 8});
  REQUIRE(DistributedSampler(2, 5, 4, false).indices() == Indices{0});  // tiny set: cycled
}

TEST_CASE("with shuffle: one permutation per seed and epoch, shared by all ranks") {
  for (bool drop_last : {false, true}) {
    for (std::int64_t epoch : {0, 1}) {
      // Interleaving the ranks' lists rebuilds the (padded) permutation.
      std::vector<Indices> parts;
      for (int r = 0; r < 3; ++r) {
        DistributedSampler s(10, 3, r, true, 42, drop_last);
        s.set_epoch(epoch);
        parts.push_back(s.indices());
        REQUIRE(static_cast<std::int64_t>(parts.back().size()) == s.num_samples());
      }
      Indices order;
      for (std::size_t i = 0; i < parts[0].size(); ++i) {
        for (const auto& p : parts) order.push_back(p[i]);
      }
      if (drop_last) {
        REQUIRE(order.size() == 9);
        REQUIRE(std::set<std::int64_t>(order.begin(), order.end()).size() == 9);
      } else {
        REQUIRE(order.size() == 12);
        REQUIRE(std::set<std::int64_t>(order.begin(), order.begin() + 10).size() == 10);  // a permutation
        REQUIRE(Indices(order.begin() + 10, order.end()) == Indices(order.begin(), order.begin() + 2));  // padding from its start
      }
    }
  }
  DistributedSampler a(10, 3, 0, true, 42), b(10, 3, 0, true, 42);
  b.set_epoch(1);
  REQUIRE(a.indices() != b.indices());  // a new permutation each epoch
  REQUIRE(a.indices() == DistributedSampler(10, 3, 0, true, 42).indices());
  REQUIRE_THROWS_WITH(DistributedSampler(10, 3, 3), Catch::Contains("rank 3 is not in [0, 3)"));
}
