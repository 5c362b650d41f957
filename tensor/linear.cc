// The Linear kernels: bias copied into each row of y and the GEMM accumulated onto it (beta = 1),
// then in backward dx = dy W, dW = dy^T x and db as column sums, all on the layouts at hand.
#include "tensor/linear.h"

#include <fmt/format.h>

#include <stdexcept>

#include "tensor/cpu_clones.h"
#include "tensor/cuda_kernels.h"
#include "tensor/gemm.h"
#include "tensor/view.h"

namespace ringgrad::kernels {
namespace {

void check_devices(const char* op, const Tensor& a, const Tensor& b, const Tensor& c) {
#if RINGGRAD_HAVE_CUDA
  cuda::check_same_device(op, a, b);
  if (c.defined()) cuda::check_same_device(op, a, c);
#else
  static_cast<void>(op), static_cast<void>(a), static_cast<void>(b), static_cast<void>(c);
#endif
}

// db [cols] += the column sums of g [rows, cols], row after row (every column summed top to
// bottom; the inner loop runs along a row, so it is a vector loop).
template <typename T>
RINGGRAD_CPU_CLONES void add_column_sums_rows(const T* g, T* db, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < cols; ++j) db[j] += g[r * cols + j];
  }
}

// db [out] += the column sums of dy [rows, out] (on a GPU: linear.cu).
template <typename T>
void add_column_sums(const Tensor& dy, std::int64_t rows, std::int64_t out_features, const Tensor& db) {
  RINGGRAD_ON_CUDA(dy, cuda::linear_bias_backward(dy, rows, out_features, db));
  add_column_sums_rows(dy.data<T>(), db.data<T>(), rows, out_features);
}

}  // namespace

Tensor linear(const Tensor& x_in, const Tensor& weight, const Tensor& bias) {
  const bool ok = x_in.dim() >= 1 && weight.dim() == 2 && x_in.size(-1) == weight.size(1) &&
                  x_in.dtype() == weight.dtype() &&
                  (!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0) && bias.dtype() == x_in.dtype()));
  if (!ok) {
    throw std::invalid_argument(fmt::format("linear: input {} {}, weight {} {}, bias {} do not fit y = x W^T + b",
                                            dtype_name(x_in.dtype()), shape_str(x_in.shape()), dtype_name(weight.dtype()),
                                            shape_str(weight.shape()), bias.defined() ? shape_str(bias.shape()) : "none"));
  }
  check_devices("linear", x_in, weight, bias);
  const Tensor x = contiguous(x_in), w = contiguous(weight);
  const std::int64_t in = w.size(1), out_features = w.size(0), rows = in == 0 ? 0 : x.numel() / in;
  Shape shape = x.shape();
  shape.back() = out_features;
  // Every element is written below (bias rows, then the GEMM), except when in == 0 without bias.
  Tensor y = in == 0 ? Tensor::zeros(shape, x.dtype(), x.device()) : Tensor::empty(shape, x.dtype(), x.device());
  // Start every row at b, then accumulate x W^T onto it (beta = 1): the bias add costs no pass.
  if (bias.defined()) copy_(y, expand(bias, shape));
  dispatch_floating(x.dtype(), "linear", [&]<typename T>() {
    GemmArgs<T> g;
    g.trans_b = true, g.m = rows, g.n = out_features, g.k = in;
    g.a = x.data<T>(), g.lda = in, g.b = w.data<T>(), g.ldb = in;
    g.beta = bias.defined() ? 1 : 0, g.c = y.data<T>(), g.ldc = out_features;
    if (rows > 0 && out_features > 0 && in > 0) gemm_batched(x.device(), g);
  });
  return y;
}

LinearGrads linear_backward(const Tensor& dy_in, const Tensor& x_in, const Tensor& weight, bool has_bias, bool need_dx,
                            bool need_dweight) {
  check_devices("linear_backward", dy_in, x_in, weight);
  const Tensor dy = contiguous(dy_in), x = contiguous(x_in), w = contiguous(weight);
  const std::int64_t in = w.size(1), out_features = w.size(0), rows = in == 0 ? 0 : x.numel() / in;
  const Device device = x.device();
  LinearGrads grads;
  const bool empty_product = rows == 0 || in == 0 || out_features == 0;
  auto result = [&](const Shape& shape) {  // the GEMMs below write every element (beta = 0)
    return empty_product ? Tensor::zeros(shape, x.dtype(), device) : Tensor::empty(shape, x.dtype(), device);
  };
  if (need_dweight) grads.dweight = result(w.shape());
  if (has_bias) grads.dbias = Tensor::zeros({out_features}, w.dtype(), device);  // accumulated into
  if (need_dx) grads.dx = result(x.shape());
  if (empty_product) return grads;
  dispatch_floating(x.dtype(), "linear_backward", [&]<typename T>() {
    const T* g = dy.data<T>();
    if (need_dweight) {  // dW [out, in] = dy^T [out, N] x [N, in]
      GemmArgs<T> dw;
      dw.trans_a = true, dw.m = out_features, dw.n = in, dw.k = rows;
      dw.a = g, dw.lda = out_features, dw.b = x.data<T>(), dw.ldb = in, dw.c = grads.dweight.data<T>(), dw.ldc = in;
      gemm_batched(device, dw);
    }
    if (need_dx) {  // dx [N, in] = dy [N, out] W [out, in]
      GemmArgs<T> dx;
      dx.m = rows, dx.n = in, dx.k = out_features;
      dx.a = g, dx.lda = out_features, dx.b = w.data<T>(), dx.ldb = in, dx.c = grads.dx.data<T>(), dx.ldc = in;
      gemm_batched(device, dx);
    }
    if (has_bias) add_column_sums<T>(dy, rows, out_features, grads.dbias);
  });
  return grads;
}

}  // namespace ringgrad::kernels
