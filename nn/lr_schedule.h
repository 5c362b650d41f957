// Learning-rate schedule of GPT training (nanoGPT's get_lr): linear warmup, then a half cosine
// from the peak down to a floor (Loshchilov & Hutter 2017, SGDR without restarts).
#pragma once

#include <cstdint>

namespace ringgrad::nn {

struct CosineSchedule {
  double lr = 1e-3;                    // peak, reached at the end of warmup
  double min_lr = 1e-4;                // floor, reached at decay_iters and kept after
  std::int64_t warmup_iters = 100;
  std::int64_t decay_iters = 2000;

  /// lr (it + 1) / warmup_iters while it < warmup_iters; then
  /// min_lr + (lr - min_lr) (1 + cos(pi r)) / 2 with r = (it - warmup) / (decay - warmup);
  /// min_lr after decay_iters.
  double at(std::int64_t it) const;
};

}  // namespace ringgrad::nn
