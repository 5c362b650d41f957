// On a uniform network without contention (every rank its own links, alpha 5 us, 10 GB/s, a
// reduction at 16 GB/s and a copy at 32 GB/s: half a reduction, as cost_model.cc's Bruck term
// assumes), the simulated time of an algorithm equals the cost model's closed form for it
// wherever the formula counts what the code does: the ring at any p (a count divisible by p:
// equal blocks); the binomial tree for powers of two and one piece (pieces pipeline down a
// tree, which the formula leaves out); halving-doubling for powers of two, and for other p where
// its halves exceed the flow-control window (smaller ones reach a folded rank while it still
// takes in its neighbour's vector, a contention the formula leaves out), below 16 KiB without
// copies (recursive doubling copies its vector each step, which the formula leaves out); Bruck
// for powers of two (otherwise its last step sends fewer than half the blocks). Prints the
// largest relative difference.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "collectives/sim/simulate.h"

namespace ringgrad::test {
namespace {

using collectives::Algo;
using collectives::CollKind;
using collectives::sim::Call;
using collectives::sim::Topology;
using collectives::sim::World;
using collectives::sim::WorldOptions;

constexpr double kAlpha = 5e-6, kBeta = 1 / 10e9, kGamma = 1 / 16e9, kCopy = 1 / 32e9;

// The largest |simulated - model| / model over `counts` (elements of float32).
double worst(int p, CollKind kind, Algo algo, const std::vector<std::size_t>& counts, bool copies_free = false) {
  WorldOptions sizes_only;
  sizes_only.payload = false;
  World world(Topology::uniform(p, kAlpha, kBeta, kGamma, copies_free ? 0 : kCopy), sizes_only);
  const auto model = world.topology().cost_model(world.options().chunk_bytes);
  double worst = 0;
  for (std::size_t count : counts) {
    const std::size_t bytes = count * 4 * (kind == CollKind::kAllToAll ? static_cast<std::size_t>(p) : 1);
    const double sim = collectives::sim::simulate(world, Call{kind, algo, count}).seconds;
    const double closed = model.predict(kind, algo, bytes, p, p);
    INFO(fmt::format("p={} {} {} bytes={}: simulated {:.9g} s, model {:.9g} s", p, collectives::coll_name(kind),
                     collectives::algo_name(algo), bytes, sim, closed));
    CHECK(std::abs(sim - closed) <= 1e-9 * closed);
    worst = std::max(worst, std::abs(sim - closed) / closed);
  }
  return worst;
}

}  // namespace

TEST_CASE("on a uniform network the simulated times equal the closed form", "[sim]") {
  double largest = 0;
  for (int p : {2, 3, 5, 8, 63, 64, 100}) {
    const auto P = static_cast<std::size_t>(p);
    // Ring: 1 to 3 segments of p pieces of 128 KiB.
    largest = std::max(largest, worst(p, CollKind::kAllReduce, Algo::kRing, {P, 1000 * P, 40000 * P, 65536 * P + 7 * P}));
    // Halving-doubling: where p is not a power of two, only halves above the window (1 MiB).
    const auto q = static_cast<std::size_t>(std::bit_floor(static_cast<unsigned>(p)));
    if (q == P) largest = std::max(largest, worst(p, CollKind::kAllReduce, Algo::kHalvingDoubling, {q * 10000}));
    if (q == P || p >= 63)
      largest = std::max(largest, worst(p, CollKind::kAllReduce, Algo::kHalvingDoubling, {32768 * P, 2 * 32768 * P + q * 16384}));
  }
  for (int p : {2, 4, 8, 64, 256}) {
    largest = std::max(largest, worst(p, CollKind::kAllReduce, Algo::kHalvingDoubling, {1, 1000, 4096}, true));
    largest = std::max(largest, worst(p, CollKind::kAllReduce, Algo::kTree, {1, 1000, 32768}));
    largest = std::max(largest, worst(p, CollKind::kAllToAll, Algo::kBruck, {1, 100, 10000}));
  }
  fmt::print("largest relative difference between simulated and closed-form times: {:.3g}\n", largest);
}

}  // namespace ringgrad::test
