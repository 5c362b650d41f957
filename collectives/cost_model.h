// CostModel: the alpha-beta-gamma model (Hockney; Thakur, Rabenseifner & Gropp 2005) that
// Algo::kAuto uses to pick, per call, the algorithm predicted fastest for n bytes on p ranks.
#pragma once

#include <cstddef>
#include <string>

#include "collectives/algo.h"

namespace ringgrad::collectives {

class Communicator;

/// The largest all-reduce (bytes) for which CostModel::choose() considers one-shot. Asked for by
/// name, one-shot runs at any size, and CostModel::predict() prices it at any size.
inline constexpr std::size_t kOneShotMaxBytes = 64 << 10;

/// T = alpha * messages + beta * bytes sent + gamma * bytes reduced, along the critical path.
/// Defaults were measured on a 2-core machine over loopback; calibrate() measures them anew.
/// alpha and beta are those of the slowest links a flat algorithm crosses (between hosts when
/// the ranks span several); alpha_local and beta_local those inside a host.
struct CostModel {
  double alpha = 20e-6;        // seconds per message (latency)
  double beta = 1.0 / 2.5e9;   // seconds per byte sent (1 / bandwidth)
  double alpha_local = 20e-6;
  double beta_local = 1.0 / 2.5e9;
  double gamma = 1.0 / 4e9;    // seconds per byte reduced (float32 sum)
  std::size_t chunk_bytes = 128 << 10;  // pipelining piece and segment size per rank

  /// Predicted seconds of `kind` with `algo` (not kAuto) moving n bytes among p ranks on
  /// `hosts` hosts of p / hosts ranks each; n is nccl-tests' size: the whole buffer
  /// (all_gather: the output, reduce_scatter: the input). Infinity where `kind` has no `algo`.
  double predict(CollKind kind, Algo algo, std::size_t n, int p, int hosts = 1) const;
  /// The algorithm of `kind` with the lowest prediction (ring on a tie) among those offered at
  /// n bytes: all of kind's, but one-shot up to kOneShotMaxBytes only; never kAuto.
  Algo choose(CollKind kind, std::size_t n, int p, int hosts = 1) const;
  /// "alpha 12.3 us, beta 0.40 ns/B (2.50 GB/s), gamma 0.25 ns/B (4.00 GB/s)", and the local
  /// figures when they differ.
  std::string describe() const;
};

/// Measures alpha and beta by ping-pong between rank 0 and the first rank on another host
/// (8 B and 4 MiB messages, half the round trip), alpha_local and beta_local with the first
/// other rank on its own host (the same figures where there is only one of the two; through
/// shared memory when the world is those 2 ranks and its collectives take it), and
/// gamma by timing a local float32 sum of 4 MiB, then broadcasts rank
/// 0's figures so every rank holds the same model (and so picks the same algorithm). Collective:
/// every rank must call it. On one rank only gamma is measured.
CostModel calibrate(Communicator& comm);

}  // namespace ringgrad::collectives
