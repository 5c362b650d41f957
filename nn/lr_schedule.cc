// The schedules' at(it): the learning rate at iteration `it`, a linear warmup to the peak, then a
// half cosine down to min_lr by decay_iters (nanoGPT's get_lr), or the peak held and a straight
// cooldown (WSD); min_lr after decay_iters.
#include "nn/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ringgrad::nn {

double CosineSchedule::at(std::int64_t it) const {
  if (it < warmup_iters) return lr * static_cast<double>(it + 1) / static_cast<double>(warmup_iters);
  if (it > decay_iters) return min_lr;
  const double r = static_cast<double>(it - warmup_iters) / static_cast<double>(std::max<std::int64_t>(1, decay_iters - warmup_iters));
  return min_lr + 0.5 * (1.0 + std::cos(std::numbers::pi * r)) * (lr - min_lr);
}

double WsdSchedule::at(std::int64_t it) const {
  if (it < warmup_iters) return lr * static_cast<double>(it + 1) / static_cast<double>(warmup_iters);
  if (it >= decay_iters) return min_lr;
  const double cooldown_start = (1.0 - cooldown_frac) * static_cast<double>(decay_iters);
  const double t = static_cast<double>(it);
  if (t <= cooldown_start) return lr;
  return lr + (min_lr - lr) * (t - cooldown_start) / (static_cast<double>(decay_iters) - cooldown_start);
}

}  // namespace ringgrad::nn
