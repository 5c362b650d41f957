// AlgoChoice: the caller's algorithm, else RINGGRAD_ALGO's, else the cost model's.
#include "collectives/algo_choice.h"

#include "collectives/task.h"

namespace ringgrad::collectives {

AlgoChoice::AlgoChoice(const CostModel& model, Algo preferred, int world_size, int hosts)
    : model_(model), world_size_(world_size), hosts_(hosts) {
  for (std::size_t k = 0; k < kCollKinds; ++k)
    if (has_algo(static_cast<CollKind>(k), preferred)) preferred_[k] = preferred;
}

Algo AlgoChoice::pick(CollKind kind, Algo algo, std::size_t n) const {
  if (algo != Algo::kAuto) return algo;
  if (const Algo preferred = preferred_[static_cast<std::size_t>(kind)]; preferred != Algo::kAuto) return preferred;
  if (kind == CollKind::kBarrier || !is_collective(kind)) return Algo::kAuto;
  const std::uint64_t question = static_cast<std::uint64_t>(n) << 16 | static_cast<std::uint64_t>(kind) << 8;
  const std::uint64_t kept = last_.load(std::memory_order_relaxed);
  if (kept != 0 && (kept & ~std::uint64_t{0xff}) == question) return static_cast<Algo>(kept & 0xff);
  std::lock_guard lock(mutex_);
  const Algo chosen = model_.choose(kind, n, world_size_, hosts_);
  // A size of 48 bits or more does not fit the packed word (algo_choice.h): it is not kept.
  if (n < (std::uint64_t{1} << 48)) last_.store(question | static_cast<std::uint64_t>(chosen), std::memory_order_relaxed);
  return chosen;
}

void AlgoChoice::set_model(const CostModel& model) {
  std::lock_guard lock(mutex_);
  model_ = model;
  last_.store(0, std::memory_order_relaxed);
}

}  // namespace ringgrad::collectives
