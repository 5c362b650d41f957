// The arithmetic of one optimizer step, written once per element (adam_step, sgd_step) and
// used by the CPU loops over flat arrays here and by their CUDA twins (optim_kernels.cu): the
// same loops serve a whole parameter (nn/optim.cc) and one rank's shard of it (ZeRO).
#pragma once

#include <cmath>
#include <cstdint>

#include "tensor/host_device.h"

namespace ringgrad::nn {

struct AdamStep {
  double lr, beta1, beta2, eps, weight_decay;
  std::int64_t t;  // step number, from 1
  bool decoupled;  // AdamW
};

/// AdamStep's numbers in T, bias corrections folded in, computed once per parameter on the host.
template <typename T>
struct AdamCoefficients {
  T step_size, inv_sqrt_bias2, b1, b2, eps, decay, l2;

  explicit AdamCoefficients(const AdamStep& s)
      : step_size(static_cast<T>(s.lr / (1 - std::pow(s.beta1, static_cast<double>(s.t))))),
        inv_sqrt_bias2(static_cast<T>(1 / std::sqrt(1 - std::pow(s.beta2, static_cast<double>(s.t))))),
        b1(static_cast<T>(s.beta1)),
        b2(static_cast<T>(s.beta2)),
        eps(static_cast<T>(s.eps)),
        decay(static_cast<T>(s.decoupled ? 1 - s.lr * s.weight_decay : 1)),
        l2(static_cast<T>(s.decoupled ? 0 : s.weight_decay)) {}
};

/// One element of Adam/AdamW: parameter p, gradient g, moments m and v (updated in place).
template <typename T>
RINGGRAD_HOST_DEVICE inline void adam_step(T& p, T g, T& m, T& v, const AdamCoefficients<T>& c) {
  const T grad = g + c.l2 * p;
  m = c.b1 * m + (1 - c.b1) * grad;
  v = c.b2 * v + (1 - c.b2) * grad * grad;
  p = c.decay * p - c.step_size * m / (std::sqrt(v) * c.inv_sqrt_bias2 + c.eps);
}

/// SGD's numbers in T.
template <typename T>
struct SgdCoefficients {
  T lr, momentum, weight_decay;
  bool has_momentum;  // momentum != 0: the buffer is used
};

/// One element of SGD with momentum buffer `buf` (untouched without momentum) and L2 decay.
template <typename T>
RINGGRAD_HOST_DEVICE inline void sgd_step(T& p, T g, T& buf, const SgdCoefficients<T>& c) {
  T d = g + c.weight_decay * p;
  if (c.has_momentum) d = buf = c.momentum * buf + d;
  p -= c.lr * d;
}

template <typename T>
SgdCoefficients<T> sgd_coefficients(double lr, double momentum, double weight_decay) {
  return {static_cast<T>(lr), static_cast<T>(momentum), static_cast<T>(weight_decay), momentum != 0};
}

/// Adam/AdamW update of p[0..n) given gradient g, moments m and v (updated in place); CPU memory.
/// T is float or double. Defined in optim.cc, built there for AVX2 and the baseline
/// (tensor/cpu_clones.h) under nn/'s -ffp-contract=off, so both clones compute the same bits.
template <typename T>
void adam_update(T* p, const T* g, T* m, T* v, std::int64_t n, const AdamStep& s);

/// SGD update with momentum buffer `buf` (ignored when momentum is 0) and L2 weight decay; CPU memory.
template <typename T>
void sgd_update(T* p, const T* g, T* buf, std::int64_t n, double lr, double momentum, double weight_decay) {
  const SgdCoefficients<T> c = sgd_coefficients<T>(lr, momentum, weight_decay);
  for (std::int64_t i = 0; i < n; ++i) sgd_step(p[i], g[i], buf[i], c);
}

namespace cuda {
/// adam_update and sgd_update on arrays in GPU `device`'s memory, queued on its tensor stream
/// (defined in a CUDA build only).
template <typename T>
void adam_update(T* p, const T* g, T* m, T* v, std::int64_t n, const AdamStep& s, int device);
template <typename T>
void sgd_update(T* p, const T* g, T* buf, std::int64_t n, double lr, double momentum, double weight_decay, int device);
}  // namespace cuda

}  // namespace ringgrad::nn
