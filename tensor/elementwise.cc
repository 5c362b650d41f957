// The element-wise kernels: one strided loop for any broadcast of the inputs, a flat loop for the
// contiguous case the compiler vectorises, a float32 fast path for GELU, and the CUDA twin taking
// over whenever a tensor is on a GPU.
#include "tensor/elementwise.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tensor/cpu_clones.h"
#include "tensor/cuda_kernels.h"
#include "tensor/gelu.h"
#include "tensor/strided_loop.h"
#include "tensor/view.h"

namespace ringgrad::kernels {
namespace {

using cuda::BinaryOp;
using cuda::UnaryOp;

// out[i] = op(a[i]) for floating-point a; `kind` names op for the CUDA twin.
template <typename Op>
Tensor map_unary(const Tensor& a, [[maybe_unused]] UnaryOp kind, const char* name, Op op) {
  RINGGRAD_ON_CUDA(a, cuda::unary(kind, a, name));
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  dispatch_floating(a.dtype(), name, [&]<typename T>() {
    T* o = out.data<T>();
    if (a.is_contiguous()) {  // the common case, as one loop the compiler can vectorise
      const T* x = a.data<T>();
      const std::int64_t n = a.numel();
      for (std::int64_t i = 0; i < n; ++i) o[i] = op(x[i]);
      return;
    }
    const T* x = reinterpret_cast<const T*>(a.storage()->data());
    std::int64_t i = 0;
    for_each_row<1>(a.shape(), {a.strides()}, {a.offset()}, [&](auto off, std::int64_t n, auto step) {
      for (std::int64_t j = 0; j < n; ++j) o[i++] = op(x[off[0] + j * step[0]]);
    });
  });
  return out;
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* name) {
  if (a.dtype() != b.dtype()) {
    throw std::invalid_argument(fmt::format("{}: dtype mismatch, {} and {}", name,
                                            dtype_name(a.dtype()), dtype_name(b.dtype())));
  }
}

// po[j] = op(px[j], py[j]): the contiguous row nearly every binary op of a training step runs.
template <typename T, typename Op>
RINGGRAD_CPU_CLONES void binary_row(T* po, const T* px, const T* py, std::int64_t n, Op op) {
  for (std::int64_t j = 0; j < n; ++j) po[j] = op(px[j], py[j]);
}

// out[i] = op(a[i], b[i]) after broadcasting a and b to a common shape. The CUDA twin takes
// over when either input is on a GPU (and throws unless both are on the same one).
template <typename Op>
Tensor map_binary(const Tensor& a, const Tensor& b, [[maybe_unused]] BinaryOp kind, const char* name, Op op) {
  check_same_dtype(a, b, name);
  RINGGRAD_ON_CUDA(a.is_cuda() ? a : b, cuda::binary(kind, a, b, name));
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  const Tensor ea = expand(a, shape);
  const Tensor eb = expand(b, shape);
  Tensor out = Tensor::empty(shape, a.dtype());
  dispatch_all(a.dtype(), [&]<typename T>() {
    T* o = reinterpret_cast<T*>(out.storage()->data());
    const T* x = reinterpret_cast<const T*>(ea.storage()->data());
    const T* y = reinterpret_cast<const T*>(eb.storage()->data());
    for_each_row<3>(shape, {out.strides(), ea.strides(), eb.strides()}, {0, ea.offset(), eb.offset()},
                    [&](auto off, std::int64_t n, auto step) {
                      T* po = o + off[0];
                      const T* px = x + off[1];
                      const T* py = y + off[2];
                      if (step[1] == 1 && step[2] == 1) {  // the common, vectorisable case
                        binary_row(po, px, py, n, op);
                      } else {
                        for (std::int64_t j = 0; j < n; ++j) {
                          po[j] = op(px[j * step[1]], py[j * step[2]]);
                        }
                      }
                    });
  });
  return out;
}

// GELU is the one element-wise op of a GPT step large enough to matter (B T 4C elements per
// block), so its float32 loops are built per instruction set: the value alone (no gradient to
// come), and the value with the slope that backward multiplies by.
RINGGRAD_CPU_CLONES_AVX512 void gelu_f32(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = gelu_value(x[i]);
}

RINGGRAD_CPU_CLONES_AVX512 void gelu_with_slope_f32(const float* x, float* y, float* slope, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float t = gelu_tanh(gelu_inner(x[i]));
    y[i] = gelu_value_given_tanh(x[i], t);
    slope[i] = gelu_slope_given_tanh(x[i], t);
  }
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  return map_binary(a, b, BinaryOp::add, "add", [](auto x, auto y) { return x + y; });
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return map_binary(a, b, BinaryOp::sub, "sub", [](auto x, auto y) { return x - y; });
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return map_binary(a, b, BinaryOp::mul, "mul", [](auto x, auto y) { return x * y; });
}
Tensor div(const Tensor& a, const Tensor& b) {
  return map_binary(a, b, BinaryOp::div, "div", [](auto x, auto y) { return x / y; });
}
Tensor pow(const Tensor& a, const Tensor& b) {
  return map_binary(a, b, BinaryOp::pow, "pow", [](auto x, auto y) { return static_cast<decltype(x)>(std::pow(x, y)); });
}
Tensor eq(const Tensor& a, const Tensor& b) {
  return map_binary(a, b, BinaryOp::eq, "eq", [](auto x, auto y) { return static_cast<decltype(x)>(x == y); });
}
Tensor add(const Tensor& a, double b) { return add(a, Tensor::scalar(b, a.dtype(), a.device())); }
Tensor mul(const Tensor& a, double b) { return mul(a, Tensor::scalar(b, a.dtype(), a.device())); }
Tensor pow(const Tensor& a, double exponent) { return pow(a, Tensor::scalar(exponent, a.dtype(), a.device())); }

Tensor neg(const Tensor& a) { return map_unary(a, UnaryOp::neg, "neg", [](auto x) { return -x; }); }
Tensor exp(const Tensor& a) { return map_unary(a, UnaryOp::exp, "exp", [](auto x) { return std::exp(x); }); }
Tensor log(const Tensor& a) { return map_unary(a, UnaryOp::log, "log", [](auto x) { return std::log(x); }); }
Tensor sqrt(const Tensor& a) { return map_unary(a, UnaryOp::sqrt, "sqrt", [](auto x) { return std::sqrt(x); }); }
Tensor tanh(const Tensor& a) { return map_unary(a, UnaryOp::tanh, "tanh", [](auto x) { return std::tanh(x); }); }
Tensor sigmoid(const Tensor& a) {
  return map_unary(a, UnaryOp::sigmoid, "sigmoid", [](auto x) { return 1 / (1 + std::exp(-x)); });
}
Tensor relu(const Tensor& a) {
  return map_unary(a, UnaryOp::relu, "relu", [](auto x) { return x > 0 ? x : decltype(x){0}; });
}
Tensor gelu(const Tensor& a) {
  if (!a.is_cuda() && a.dtype() == DType::Float32 && a.is_contiguous()) {
    Tensor out = Tensor::empty(a.shape(), a.dtype());
    gelu_f32(a.data<float>(), out.data<float>(), a.numel());
    return out;
  }
  return map_unary(a, UnaryOp::gelu, "gelu", [](auto x) { return gelu_value(x); });
}

Tensor relu_backward(const Tensor& grad, const Tensor& x) {
  return map_binary(grad, x, BinaryOp::relu_backward, "relu_backward",
                    [](auto g, auto v) { return v > 0 ? g : decltype(g){0}; });
}

Tensor gelu_backward(const Tensor& grad, const Tensor& x) {
  return map_binary(grad, x, BinaryOp::gelu_backward, "gelu_backward", [](auto g, auto v) { return gelu_grad(g, v); });
}

GeluWithSlope gelu_with_slope(const Tensor& x) {
  if (!x.is_cuda() && x.dtype() == DType::Float32 && x.is_contiguous()) {
    GeluWithSlope out{Tensor::empty(x.shape(), x.dtype()), Tensor::empty(x.shape(), x.dtype())};
    gelu_with_slope_f32(x.data<float>(), out.y.data<float>(), out.slope.data<float>(), x.numel());
    return out;
  }
  // Elsewhere (float64, strided, a GPU) the slope is gelu_backward of a broadcast 1: 1 * slope
  // is slope.
  return {gelu(x), gelu_backward(Tensor::scalar(1.0, x.dtype(), x.device()), x)};
}

void add_(const Tensor& dst, const Tensor& src, double alpha) {
  check_same_dtype(dst, src, "add_");
  RINGGRAD_ON_CUDA(dst.is_cuda() ? dst : src, cuda::add_(dst, src, alpha));
  const Tensor s = expand(src, dst.shape());
  dispatch_all(dst.dtype(), [&]<typename T>() {
    T* d = reinterpret_cast<T*>(dst.storage()->data());
    const T* x = reinterpret_cast<const T*>(s.storage()->data());
    const T a = static_cast<T>(alpha);
    for_each_row<2>(dst.shape(), {dst.strides(), s.strides()}, {dst.offset(), s.offset()},
                    [&](auto off, std::int64_t n, auto step) {
                      for (std::int64_t j = 0; j < n; ++j) {
                        d[off[0] + j * step[0]] += a * x[off[1] + j * step[1]];
                      }
                    });
  });
}

void mul_(const Tensor& dst, double value) {
  RINGGRAD_ON_CUDA(dst, cuda::mul_(dst, value));
  dispatch_all(dst.dtype(), [&]<typename T>() {
    T* d = reinterpret_cast<T*>(dst.storage()->data());
    const T v = static_cast<T>(value);
    for_each_row<1>(dst.shape(), {dst.strides()}, {dst.offset()}, [&](auto off, std::int64_t n, auto step) {
      for (std::int64_t j = 0; j < n; ++j) d[off[0] + j * step[0]] *= v;
    });
  });
}

void fill_(const Tensor& dst, double value) {
  RINGGRAD_ON_CUDA(dst, cuda::fill_(dst, value));
  dispatch_all(dst.dtype(), [&]<typename T>() {
    T* d = reinterpret_cast<T*>(dst.storage()->data());
    const T v = static_cast<T>(value);
    for_each_row<1>(dst.shape(), {dst.strides()}, {dst.offset()}, [&](auto off, std::int64_t n, auto step) {
      if (step[0] == 1) {
        std::fill(d + off[0], d + off[0] + n, v);  // zeroing a gradient bucket: a memset
      } else {
        for (std::int64_t j = 0; j < n; ++j) d[off[0] + j * step[0]] = v;
      }
    });
  });
}

}  // namespace ringgrad::kernels
