// Softmax and log-softmax row by row on the CPU, each row shifted by its maximum first, and
// their backward passes from the saved output.
#include "tensor/softmax.h"

#include <algorithm>
#include <cmath>

#include "tensor/cuda_kernels.h"
#include "tensor/view.h"

namespace ringgrad::kernels {
namespace {

using cuda::SoftmaxOp;

// Runs fn(x_row, y_row, out_row, n) over every row of contiguous [R, n] x (and y, when defined);
// on a GPU the CUDA twin does the rows named by `kind`.
template <typename RowFn>
void each_row([[maybe_unused]] SoftmaxOp kind, const char* op, const Tensor& x, const Tensor& y, const Tensor& out, RowFn fn) {
  RINGGRAD_ON_CUDA(x.is_cuda() ? x : y, cuda::softmax_rows(kind, x, y, out, op));
  const std::int64_t n = x.dim() == 0 ? 1 : x.size(-1);
  const std::int64_t rows = n == 0 ? 0 : x.numel() / n;
  dispatch_floating(x.dtype(), op, [&]<typename T>() {
    for (std::int64_t r = 0; r < rows; ++r) {
      fn(x.data<T>() + r * n, y.defined() ? y.data<T>() + r * n : nullptr, out.data<T>() + r * n, n);
    }
  });
}

// Applies a row function along `dim` of same-shaped tensors: the rows are made contiguous by
// moving `dim` last; the result is moved back.
template <typename RowFn>
Tensor by_rows(SoftmaxOp kind, const char* op, const Tensor& x, const Tensor& y, std::int64_t dim, RowFn fn) {
  const std::int64_t d = normalize_dim(dim, x.dim(), op);
  const Tensor xr = contiguous(transpose(x, d, -1));
  const Tensor yr = y.defined() ? contiguous(transpose(y, d, -1)) : Tensor();
  Tensor out = Tensor::empty(xr.shape(), x.dtype(), x.device());
  each_row(kind, op, xr, yr, out, fn);
  return contiguous(transpose(out, d, -1));
}

}  // namespace

Tensor softmax(const Tensor& x, std::int64_t dim) {
  return by_rows(SoftmaxOp::softmax, "softmax", x, Tensor(), dim,
                 []<typename T>(const T* in, const T*, T* out, std::int64_t n) {
                   const T mx = *std::max_element(in, in + n);
                   T total = 0;
                   for (std::int64_t i = 0; i < n; ++i) total += out[i] = std::exp(in[i] - mx);
                   for (std::int64_t i = 0; i < n; ++i) out[i] /= total;
                 });
}

Tensor log_softmax(const Tensor& x, std::int64_t dim) {
  return by_rows(SoftmaxOp::log_softmax, "log_softmax", x, Tensor(), dim,
                 []<typename T>(const T* in, const T*, T* out, std::int64_t n) {
                   const T mx = *std::max_element(in, in + n);
                   T total = 0;
                   for (std::int64_t i = 0; i < n; ++i) total += std::exp(in[i] - mx);
                   const T log_total = mx + std::log(total);
                   for (std::int64_t i = 0; i < n; ++i) out[i] = in[i] - log_total;
                 });
}

Tensor softmax_backward(const Tensor& grad, const Tensor& y, std::int64_t dim) {
  return by_rows(SoftmaxOp::softmax_backward, "softmax_backward", grad, y, dim,
                 []<typename T>(const T* g, const T* s, T* out, std::int64_t n) {
                   T dot = 0;
                   for (std::int64_t i = 0; i < n; ++i) dot += g[i] * s[i];
                   for (std::int64_t i = 0; i < n; ++i) out[i] = s[i] * (g[i] - dot);
                 });
}

Tensor log_softmax_backward(const Tensor& grad, const Tensor& y, std::int64_t dim) {
  return by_rows(SoftmaxOp::log_softmax_backward, "log_softmax_backward", grad, y, dim,
                 []<typename T>(const T* g, const T* ls, T* out, std::int64_t n) {
                   T total = 0;
                   for (std::int64_t i = 0; i < n; ++i) total += g[i];
                   for (std::int64_t i = 0; i < n; ++i) out[i] = g[i] - std::exp(ls[i]) * total;
                 });
}

}  // namespace ringgrad::kernels
