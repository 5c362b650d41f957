// Cost formulas of every algorithm, and the per-call choice among them. n bytes, p ranks,
// L = ceil(log2 p), q = the largest power of two <= p, k = pieces of chunk_bytes.
#include "collectives/cost_model.h"

#include <bit>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace ringgrad::collectives {

double CostModel::predict(CollKind kind, Algo algo, std::size_t bytes, int p, int hosts) const {
  if (p <= 1) return 0.0;
  const double n = static_cast<double>(bytes), P = p;
  const double L = std::ceil(std::log2(P));
  const double q = static_cast<double>(std::bit_floor(static_cast<unsigned>(p)));
  const double k = std::max(1.0, std::ceil(n / static_cast<double>(chunk_bytes)));
  const double a = alpha, b = beta, g = gamma;
  const double segments = std::max(1.0, std::ceil(n / (P * static_cast<double>(chunk_bytes))));  // all_reduce
  switch (kind) {
    case CollKind::kAllReduce:
      if (algo == Algo::kRing) return segments * 2 * (P - 1) * a + 2 * (P - 1) / P * n * b + (P - 1) / P * n * g;
      if (algo == Algo::kTree) return 2 * L * a + L * n * (2 * b + g);
      if (algo == Algo::kOneShot) return (P - 1) * (a + n * (b + g));
      if (algo == Algo::kHierarchical && (hosts <= 1 || p % hosts != 0))
        return predict(kind, Algo::kRing, bytes, p, hosts);  // what hier runs then
      if (algo == Algo::kHierarchical) {
        // Local reduce-scatter and all-gather rings of l ranks, then H rings across hosts
        // (one per local position) sharing each host's link: n / H bytes a step on it.
        const double H = hosts, l = P / H;
        return 2 * (l - 1) * alpha_local + 2 * (l - 1) / l * n * beta_local + (l - 1) / l * n * g +
               2 * (H - 1) * a + 2 * (H - 1) / H * n * b + (H - 1) / H * n / l * g;
      }
      if (algo == Algo::kHalvingDoubling && n <= 16 * 1024)  // recursive doubling
        return (std::log2(q) + (q < P ? 2 : 0)) * a + std::log2(q) * n * (b + g) + (q < P ? 2 * n * b + n * g : 0.0);
      if (algo == Algo::kHalvingDoubling)
        return segments * (2 * std::log2(q) + (q < P ? 2 : 0)) * a + 2 * (q - 1) / q * n * b +
               (q - 1) / q * n * g + (q < P ? 2 * n * b + n * g : 0.0);
      break;
    case CollKind::kBroadcast:
      if (algo == Algo::kRing) return (P - 2 + k) * (a + n / k * b);
      if (algo == Algo::kTree) return L * (a + n * b);
      break;
    case CollKind::kReduce:
      if (algo == Algo::kRing) return (P - 2 + k) * (a + n / k * (b + g));
      if (algo == Algo::kTree) return L * (a + n * (b + g));
      break;
    case CollKind::kAllGather:
      if (algo == Algo::kRing) return (P - 1) * a + (P - 1) / P * n * b;
      break;
    case CollKind::kReduceScatter:
      if (algo == Algo::kRing) return (P - 1) * a + (P - 1) / P * n * (b + g);
      break;
    case CollKind::kGather:
    case CollKind::kScatter:
      if (algo == Algo::kLinear) return (P - 1) * a + (P - 1) / P * n * b;
      break;
    case CollKind::kAllToAllV:  // n: this rank's send (the largest rank's sets the pace)
    case CollKind::kAllToAll:
      if (algo == Algo::kPairwise) return (P - 1) * a + (P - 1) / P * n * b;
      // Each step sends at most half the blocks; the two rotations and each step's packing copy
      // (2 + L) n bytes locally, a copy costing about half a reduction (gamma / 2 per byte).
      if (algo == Algo::kBruck) return L * a + L * n / 2 * b + (2 + L) * n * g / 2;
      break;
    default: break;
  }
  return std::numeric_limits<double>::infinity();
}

Algo CostModel::choose(CollKind kind, std::size_t n, int p, int hosts) const {
  Algo best = Algo::kRing;
  double best_t = std::numeric_limits<double>::infinity();
  for (Algo a : kAllAlgos) {
    // One-shot past kOneShotMaxBytes: the ring is faster on 2 ranks over shared memory (one-shot
    // reduces the whole vector on every rank), though the model, paying the ring an alpha per
    // segment, would say otherwise; and one-shot's workspace is p n bytes.
    if (a == Algo::kOneShot && n > kOneShotMaxBytes) continue;
    const double t = predict(kind, a, n, p, hosts);  // infinite where `kind` has no `a`
    if (t < best_t) best = a, best_t = t;
  }
  return best;
}

std::string CostModel::describe() const {
  std::string s = fmt::format("alpha {:.2f} us, beta {:.3f} ns/B ({:.2f} GB/s), gamma {:.3f} ns/B ({:.2f} GB/s)",
                              alpha * 1e6, beta * 1e9, 1e-9 / beta, gamma * 1e9, 1e-9 / gamma);
  if (alpha_local != alpha || beta_local != beta)
    s += fmt::format("; inside a host alpha {:.2f} us, beta {:.3f} ns/B ({:.2f} GB/s)", alpha_local * 1e6,
                     beta_local * 1e9, 1e-9 / beta_local);
  return s;
}

}  // namespace ringgrad::collectives
