// AlgoChoice: the caller's algorithm, else RINGGRAD_ALGO's, else the cost model's.
#include "collectives/algo_choice.h"

#include "collectives/task.h"

namespace ringgrad::collectives {

AlgoChoice::AlgoChoice(const CostModel& model, Algo preferred, int world_size, int hosts)
    : model_(model), preferred_(preferred), world_size_(world_size), hosts_(hosts) {}

Algo AlgoChoice::pick(CollKind kind, Algo algo, std::size_t n) const {
  if (algo != Algo::kAuto) return algo;
  if (has_algo(kind, preferred_)) return preferred_;
  if (kind == CollKind::kBarrier || !is_collective(kind)) return Algo::kAuto;
  std::lock_guard lock(mutex_);
  if (last_.algo == Algo::kAuto || last_.kind != kind || last_.bytes != n)
    last_ = {kind, n, model_.choose(kind, n, world_size_, hosts_)};
  return last_.algo;
}

void AlgoChoice::set_model(const CostModel& model) {
  std::lock_guard lock(mutex_);
  model_ = model;
  last_ = {};
}

}  // namespace ringgrad::collectives
