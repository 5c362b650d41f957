// QK-norm on the fused qkv: one loop over the q and k head vectors of each position, the
// statistics in double.
#include "tensor/qk_norm.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "tensor/dtype.h"
#include "tensor/view.h"

namespace ringgrad::kernels {
namespace {

void check(const Tensor& qkv, std::int64_t n_head, const char* op) {
  if (qkv.dim() != 3 || qkv.size(2) % 3 != 0 || n_head < 1 || (qkv.size(2) / 3) % n_head != 0)
    throw std::invalid_argument(fmt::format("{}: qkv {} does not split into q, k, v of {} heads", op,
                                            shape_str(qkv.shape()), n_head));
  if (qkv.is_cuda()) throw std::invalid_argument(fmt::format("{}: not built for GPU tensors yet", op));
}

// Calls fn(offset) for the first element of every q and k head vector of a [B, T, 3C] array.
template <typename Fn>
void for_each_qk_head(const Tensor& qkv, std::int64_t n_head, Fn&& fn) {
  const std::int64_t rows = qkv.size(0) * qkv.size(1), c = qkv.size(2) / 3, d = c / n_head;
  for (std::int64_t row = 0; row < rows; ++row)
    for (std::int64_t h = 0; h < 2 * n_head; ++h) fn(row * 3 * c + h * d);  // q's heads, then k's
}

}  // namespace

Tensor qk_norm(const Tensor& qkv, std::int64_t n_head, double eps) {
  check(qkv, n_head, "qk_norm");
  const std::int64_t d = qkv.size(2) / 3 / n_head;
  Tensor out = clone(contiguous(qkv));
  dispatch_floating(out.dtype(), "qk_norm", [&]<typename T>() {
    T* x = out.data<T>();
    for_each_qk_head(out, n_head, [&](std::int64_t at) {
      double sq = 0;
      for (std::int64_t i = 0; i < d; ++i) sq += static_cast<double>(x[at + i]) * x[at + i];
      const double inv_r = 1.0 / std::sqrt(sq / static_cast<double>(d) + eps);
      for (std::int64_t i = 0; i < d; ++i) x[at + i] = static_cast<T>(x[at + i] * inv_r);
    });
  });
  return out;
}

Tensor qk_norm_backward(const Tensor& grad, const Tensor& qkv, std::int64_t n_head, double eps) {
  check(qkv, n_head, "qk_norm_backward");
  if (grad.shape() != qkv.shape())
    throw std::invalid_argument(fmt::format("qk_norm_backward: gradient {} for input {}", shape_str(grad.shape()),
                                            shape_str(qkv.shape())));
  const std::int64_t d = qkv.size(2) / 3 / n_head;
  const Tensor x = contiguous(qkv);
  Tensor dx = clone(contiguous(grad));  // v's gradient passes through
  dispatch_floating(dx.dtype(), "qk_norm_backward", [&]<typename T>() {
    const T* in = x.data<T>();
    T* g = dx.data<T>();
    for_each_qk_head(x, n_head, [&](std::int64_t at) {
      double sq = 0;
      for (std::int64_t i = 0; i < d; ++i) sq += static_cast<double>(in[at + i]) * in[at + i];
      const double inv_r = 1.0 / std::sqrt(sq / static_cast<double>(d) + eps);
      double gy = 0;  // mean(dy * y)
      for (std::int64_t i = 0; i < d; ++i) gy += static_cast<double>(g[at + i]) * in[at + i] * inv_r;
      gy /= static_cast<double>(d);
      for (std::int64_t i = 0; i < d; ++i) g[at + i] = static_cast<T>((g[at + i] - in[at + i] * inv_r * gy) * inv_r);
    });
  });
  return dx;
}

}  // namespace ringgrad::kernels
