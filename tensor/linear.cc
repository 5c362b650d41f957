#include "tensor/linear.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "tensor/gemm.h"
#include "tensor/view.h"

namespace ringgrad::kernels {

Tensor linear(const Tensor& x_in, const Tensor& weight, const Tensor& bias) {
  const bool ok = x_in.dim() >= 1 && weight.dim() == 2 && x_in.size(-1) == weight.size(1) &&
                  x_in.dtype() == weight.dtype() &&
                  (!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0) && bias.dtype() == x_in.dtype()));
  if (!ok) {
    throw std::invalid_argument(fmt::format("linear: input {} {}, weight {} {}, bias {} do not fit y = x W^T + b",
                                            dtype_name(x_in.dtype()), shape_str(x_in.shape()), dtype_name(weight.dtype()),
                                            shape_str(weight.shape()), bias.defined() ? shape_str(bias.shape()) : "none"));
  }
  const Tensor x = contiguous(x_in), w = contiguous(weight);
  const std::int64_t in = w.size(1), out_features = w.size(0), rows = in == 0 ? 0 : x.numel() / in;
  Shape shape = x.shape();
  shape.back() = out_features;
  // Every element is written below (bias rows, then the GEMM), except when in == 0 without bias.
  Tensor y = in == 0 ? Tensor::zeros(shape, x.dtype()) : Tensor::empty(shape, x.dtype());
  dispatch_floating(x.dtype(), "linear", [&]<typename T>() {
    T* py = y.data<T>();
    if (bias.defined()) {  // start every row at b, then accumulate x W^T onto it (beta = 1)
      const Tensor b = contiguous(bias);
      for (std::int64_t r = 0; r < rows; ++r) std::copy_n(b.data<T>(), out_features, py + r * out_features);
    }
    GemmArgs<T> g;
    g.trans_b = true, g.m = rows, g.n = out_features, g.k = in;
    g.a = x.data<T>(), g.lda = in, g.b = w.data<T>(), g.ldb = in;
    g.beta = bias.defined() ? 1 : 0, g.c = py, g.ldc = out_features;
    if (rows > 0 && out_features > 0 && in > 0) gemm(g);
  });
  return y;
}

LinearGrads linear_backward(const Tensor& dy_in, const Tensor& x_in, const Tensor& weight, bool has_bias, bool need_dx) {
  const Tensor dy = contiguous(dy_in), x = contiguous(x_in), w = contiguous(weight);
  const std::int64_t in = w.size(1), out_features = w.size(0), rows = in == 0 ? 0 : x.numel() / in;
  LinearGrads grads;
  const bool empty_product = rows == 0 || in == 0 || out_features == 0;
  auto result = [&](const Shape& shape) {  // the GEMMs below write every element (beta = 0)
    return empty_product ? Tensor::zeros(shape, x.dtype()) : Tensor::empty(shape, x.dtype());
  };
  grads.dweight = result(w.shape());
  if (has_bias) grads.dbias = Tensor::zeros({out_features}, w.dtype());  // accumulated into
  if (need_dx) grads.dx = result(x.shape());
  if (empty_product) return grads;
  dispatch_floating(x.dtype(), "linear_backward", [&]<typename T>() {
    const T* g = dy.data<T>();
    GemmArgs<T> dw;  // dW [out, in] = dy^T [out, N] x [N, in]
    dw.trans_a = true, dw.m = out_features, dw.n = in, dw.k = rows;
    dw.a = g, dw.lda = out_features, dw.b = x.data<T>(), dw.ldb = in, dw.c = grads.dweight.data<T>(), dw.ldc = in;
    gemm(dw);
    if (need_dx) {  // dx [N, in] = dy [N, out] W [out, in]
      GemmArgs<T> dx;
      dx.m = rows, dx.n = in, dx.k = out_features;
      dx.a = g, dx.lda = out_features, dx.b = w.data<T>(), dx.ldb = in, dx.c = grads.dx.data<T>(), dx.ldc = in;
      gemm(dx);
    }
    if (has_bias) {
      T* db = grads.dbias.data<T>();
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t j = 0; j < out_features; ++j) db[j] += g[r * out_features + j];
      }
    }
  });
  return grads;
}

}  // namespace ringgrad::kernels
