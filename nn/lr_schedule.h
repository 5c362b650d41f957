// Learning-rate schedules of GPT training: nanoGPT's get_lr (linear warmup, then a half cosine
// from the peak down to a floor: Loshchilov & Hutter 2017, SGDR without restarts) and
// warmup-stable-decay.
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

/// Warmup-stable-decay (named by MiniCPM, Hu et al. 2024; studied by Hägele et al. 2024; the
/// speedruns' schedule): linear warmup to the peak, the peak held, then a straight line down to min_lr over
/// the last `cooldown_frac` of decay_iters. Unlike the cosine, most steps run at the peak and the
/// loss drops late, in the cooldown.
struct WsdSchedule {
  double lr = 1e-3;
  double min_lr = 0.0;
  std::int64_t warmup_iters = 100;
  std::int64_t decay_iters = 2000;  // where the cooldown ends
  double cooldown_frac = 0.4;

  /// lr (it + 1) / warmup_iters while it < warmup_iters; lr until c = (1 - cooldown_frac)
  /// decay_iters; then lr + (min_lr - lr) (it - c) / (decay_iters - c); min_lr after decay_iters.
  double at(std::int64_t it) const;
};

}  // namespace ringgrad::nn
