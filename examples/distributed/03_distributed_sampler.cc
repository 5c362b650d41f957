// 03: who reads which samples. DistributedSampler gives each rank a disjoint share of every
// epoch (padded so every rank gets as many), reshuffled each epoch with the same seed on all
// ranks so they agree without talking. 10 samples over 3 ranks, as a table.
//
//   build/bin/03_distributed_sampler
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "examples/distributed/launch.h"
#include "nn/data/distributed_sampler.h"

using ringgrad::nn::data::DistributedSampler;

int main() try {
  constexpr int kRanks = 3;
  for (bool shuffle : {false, true}) {
    for (bool drop_last : {false, true}) {
      for (std::int64_t epoch : {0, 1}) {
        if (!shuffle && epoch == 1) continue;  // without shuffling every epoch is the same
        fmt::print("shuffle={} drop_last={} epoch {}:", shuffle, drop_last, epoch);
        for (int rank = 0; rank < kRanks; ++rank) {
          DistributedSampler sampler(10, kRanks, rank, shuffle, /*seed=*/0, drop_last);
          sampler.set_epoch(epoch);
          fmt::print("  rank {} {}", rank, sampler.indices());
        }
        fmt::print("\n");
      }
    }
  }
  fmt::print("Without drop_last, 10 samples become 12: the first two are repeated at the end.\n");
} catch (const std::exception& e) {
  return launch::report("03_distributed_sampler", e);
}
