#include "tensor/softmax.h"

#include <algorithm>
#include <cmath>

#include "tensor/view.h"

namespace ringgrad::kernels {
namespace {

// Runs fn(row_pointers..., n) over every row along `dim` of same-shaped tensors. The rows are
// made contiguous by moving `dim` last; the result is moved back.
template <typename RowFn>
Tensor by_rows(const char* op, const Tensor& x, const Tensor& y, std::int64_t dim, RowFn fn) {
  const std::int64_t d = normalize_dim(dim, x.dim(), op);
  const Tensor xr = contiguous(transpose(x, d, -1));
  const Tensor yr = y.defined() ? contiguous(transpose(y, d, -1)) : Tensor();
  Tensor out = Tensor::zeros(xr.shape(), x.dtype());
  const std::int64_t n = x.dim() == 0 ? 1 : xr.size(-1);
  const std::int64_t rows = n == 0 ? 0 : xr.numel() / n;
  dispatch_floating(x.dtype(), op, [&]<typename T>() {
    for (std::int64_t r = 0; r < rows; ++r) {
      fn(xr.data<T>() + r * n, y.defined() ? yr.data<T>() + r * n : nullptr, out.data<T>() + r * n, n);
    }
  });
  return contiguous(transpose(out, d, -1));
}

}  // namespace

Tensor softmax(const Tensor& x, std::int64_t dim) {
  return by_rows("softmax", x, Tensor(), dim, []<typename T>(const T* in, const T*, T* out, std::int64_t n) {
    const T mx = *std::max_element(in, in + n);
    T total = 0;
    for (std::int64_t i = 0; i < n; ++i) total += out[i] = std::exp(in[i] - mx);
    for (std::int64_t i = 0; i < n; ++i) out[i] /= total;
  });
}

Tensor log_softmax(const Tensor& x, std::int64_t dim) {
  return by_rows("log_softmax", x, Tensor(), dim, []<typename T>(const T* in, const T*, T* out, std::int64_t n) {
    const T mx = *std::max_element(in, in + n);
    T total = 0;
    for (std::int64_t i = 0; i < n; ++i) total += std::exp(in[i] - mx);
    const T log_total = mx + std::log(total);
    for (std::int64_t i = 0; i < n; ++i) out[i] = in[i] - log_total;
  });
}

Tensor softmax_backward(const Tensor& grad, const Tensor& y, std::int64_t dim) {
  return by_rows("softmax_backward", grad, y, dim, []<typename T>(const T* g, const T* s, T* out, std::int64_t n) {
    T dot = 0;
    for (std::int64_t i = 0; i < n; ++i) dot += g[i] * s[i];
    for (std::int64_t i = 0; i < n; ++i) out[i] = s[i] * (g[i] - dot);
  });
}

Tensor log_softmax_backward(const Tensor& grad, const Tensor& y, std::int64_t dim) {
  return by_rows("log_softmax_backward", grad, y, dim, []<typename T>(const T* g, const T* ls, T* out, std::int64_t n) {
    T total = 0;
    for (std::int64_t i = 0; i < n; ++i) total += g[i];
    for (std::int64_t i = 0; i < n; ++i) out[i] = g[i] - std::exp(ls[i]) * total;
  });
}

}  // namespace ringgrad::kernels
