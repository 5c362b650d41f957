// CosineSchedule::at: the learning rate at iteration `it`, a linear warmup to the peak and a half
// cosine down to min_lr by decay_iters, then min_lr (nanoGPT's get_lr).
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

}  // namespace ringgrad::nn
