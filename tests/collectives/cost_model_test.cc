// The cost model against its closed forms on 2 ranks (collectives/cost_model.h): one-shot is
// priced at every size, (p-1)(alpha + n beta + n gamma), but offered to Algo::kAuto up to
// 64 KiB only, even where its price is the lowest.
#include <catch2/catch.hpp>

#include <cmath>

#include "collectives/cost_model.h"

using ringgrad::collectives::Algo;
using ringgrad::collectives::CollKind;
using ringgrad::collectives::CostModel;

TEST_CASE("the cost model prices one-shot at every size and offers it up to 64 KiB", "[collectives]") {
  const CostModel m;
  for (std::size_t n : {std::size_t{32} << 10, std::size_t{512} << 10, std::size_t{4} << 20}) {
    INFO(n << " bytes");
    const double one_shot = m.predict(CollKind::kAllReduce, Algo::kOneShot, n, 2);
    CHECK(std::isfinite(one_shot));
    CHECK(one_shot == Approx(m.alpha + static_cast<double>(n) * (m.beta + m.gamma)));
  }
  CHECK(m.choose(CollKind::kAllReduce, 32 << 10, 2) == Algo::kOneShot);
  // 4 MiB: one exchange of n against the ring's 2 alphas for each of 16 segments of 2 x 128 KiB,
  // n beta and n/2 gamma; the model prices one-shot lower, but the ring is the one offered.
  const std::size_t n = 4 << 20;
  const double nb = static_cast<double>(n);
  const double ring = 16 * 2 * m.alpha + nb * m.beta + nb / 2 * m.gamma;
  CHECK(m.predict(CollKind::kAllReduce, Algo::kRing, n, 2) == Approx(ring));
  CHECK(m.predict(CollKind::kAllReduce, Algo::kOneShot, n, 2) < ring);
  CHECK(m.choose(CollKind::kAllReduce, n, 2) == Algo::kRing);
  CHECK(m.choose(CollKind::kAllReduce, (64 << 10) + 4, 2) != Algo::kOneShot);
}
