// AlgoChoice: which algorithm a call runs. One the caller names is kept; otherwise
// RINGGRAD_ALGO's, where the collective has it; otherwise the cost model's cheapest for the
// call's size (cost_model.h). Every rank holds the same model, so all choose alike.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "collectives/algo.h"
#include "collectives/cost_model.h"

namespace ringgrad::collectives {

class AlgoChoice {
 public:
  /// `preferred`: RINGGRAD_ALGO (kAuto: none); `hosts`: the hosts the model sees.
  AlgoChoice(const CostModel& model, Algo preferred, int world_size, int hosts);
  /// The algorithm a call of `kind` on n bytes (nccl-tests' size) asking for `algo` runs;
  /// kAuto for barrier, send, recv and batches, which have one way each. Thread-safe.
  Algo pick(CollKind kind, Algo algo, std::size_t n) const;
  /// Replaces the cost model (the same on every rank: calibrate() ensures it).
  void set_model(const CostModel& model);

 private:
  mutable std::mutex mutex_;  // guards model_
  CostModel model_;
  // RINGGRAD_ALGO's algorithm for each collective that has it, else kAuto.
  std::array<Algo, kCollKinds> preferred_{};
  int world_size_, hosts_;
  // A training loop often asks about one size over and over: the model's answer for the last
  // size asked is kept (comparing every algorithm costs a tenth of a small all-reduce), packed
  // in one word (size << 16 | kind << 8 | algo; 0: nothing kept) so a repeated question takes
  // no lock.
  mutable std::atomic<std::uint64_t> last_{0};
};

}  // namespace ringgrad::collectives
