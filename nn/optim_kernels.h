// The arithmetic of one optimizer step on a flat array of n elements: the same loops serve a
// whole parameter (nn/optim.cc) and one rank's shard of it (ZeRO).
#pragma once

#include <cmath>
#include <cstdint>

namespace ringgrad::nn {

struct AdamStep {
  double lr, beta1, beta2, eps, weight_decay;
  std::int64_t t;  // step number, from 1
  bool decoupled;  // AdamW
};

/// Adam/AdamW update of p[0..n) given gradient g, moments m and v (updated in place).
template <typename T>
void adam_update(T* p, const T* g, T* m, T* v, std::int64_t n, const AdamStep& s) {
  const double bias1 = 1 - std::pow(s.beta1, static_cast<double>(s.t));
  const double bias2 = 1 - std::pow(s.beta2, static_cast<double>(s.t));
  const T step_size = static_cast<T>(s.lr / bias1);
  const T inv_sqrt_bias2 = static_cast<T>(1 / std::sqrt(bias2));
  const T b1 = static_cast<T>(s.beta1), b2 = static_cast<T>(s.beta2), eps = static_cast<T>(s.eps);
  const T decay = static_cast<T>(s.decoupled ? 1 - s.lr * s.weight_decay : 1);
  const T l2 = static_cast<T>(s.decoupled ? 0 : s.weight_decay);
  for (std::int64_t i = 0; i < n; ++i) {
    const T grad = g[i] + l2 * p[i];
    m[i] = b1 * m[i] + (1 - b1) * grad;
    v[i] = b2 * v[i] + (1 - b2) * grad * grad;
    p[i] = decay * p[i] - step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bias2 + eps);
  }
}

/// SGD update with momentum buffer `buf` (ignored when momentum is 0) and L2 weight decay.
template <typename T>
void sgd_update(T* p, const T* g, T* buf, std::int64_t n, double lr, double momentum, double weight_decay) {
  const T lr_t = static_cast<T>(lr), mom = static_cast<T>(momentum), wd = static_cast<T>(weight_decay);
  for (std::int64_t i = 0; i < n; ++i) {
    T d = g[i] + wd * p[i];
    if (momentum != 0) d = buf[i] = mom * buf[i] + d;
    p[i] -= lr_t * d;
  }
}

}  // namespace ringgrad::nn
