// CUDA twins of elementwise.cc: one thread per output element (cuda_launch.h's grid-stride
// launcher), operands read through their (broadcast) strides. Each op is one case of a switch
// that every thread of a launch takes the same way, so a launch never diverges on it.
#include <cmath>
#include <type_traits>

#include "tensor/cuda_kernels.h"
#include "tensor/cuda_launch.h"
#include "tensor/gelu.h"
#include "tensor/view.h"

namespace ringgrad::kernels::cuda {
namespace {

using ringgrad::cuda::base;
using ringgrad::cuda::index_of;
using ringgrad::cuda::StridedIndex;

template <typename T>
__device__ T apply(UnaryOp op, T x) {
  switch (op) {
    case UnaryOp::neg: return -x;
    case UnaryOp::exp: return std::exp(x);
    case UnaryOp::log: return std::log(x);
    case UnaryOp::sqrt: return std::sqrt(x);
    case UnaryOp::tanh: return std::tanh(x);
    case UnaryOp::sigmoid: return 1 / (1 + std::exp(-x));
    case UnaryOp::relu: return x > 0 ? x : T(0);
    case UnaryOp::gelu: return gelu_value(x);
  }
  return x;
}

template <typename T>
__device__ T apply(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::add: return x + y;
    case BinaryOp::sub: return x - y;
    case BinaryOp::mul: return x * y;
    case BinaryOp::div: return x / y;
    case BinaryOp::pow:
      if constexpr (std::is_integral_v<T>) {
        return static_cast<T>(std::pow(static_cast<double>(x), static_cast<double>(y)));
      } else {
        return std::pow(x, y);
      }
    case BinaryOp::eq: return static_cast<T>(x == y);
    case BinaryOp::relu_backward: return y > 0 ? x : T(0);  // x: gradient, y: input
    case BinaryOp::gelu_backward:
      if constexpr (std::is_floating_point_v<T>) return gelu_grad(x, y);
      break;  // int64 is turned away before launch
  }
  return x;
}

template <typename T>
struct Unary {
  UnaryOp op;
  T* out;  // contiguous
  const T* a;
  StridedIndex ia;
  __device__ void operator()(std::int64_t i) const { out[i] = apply(op, a[ia(i)]); }
};

template <typename T>
struct Binary {
  BinaryOp op;
  T* out;  // contiguous
  const T* a;
  StridedIndex ia;
  const T* b;
  StridedIndex ib;
  __device__ void operator()(std::int64_t i) const { out[i] = apply(op, a[ia(i)], b[ib(i)]); }
};

template <typename T>
struct AddInPlace {
  T* dst;
  StridedIndex id;
  const T* src;
  StridedIndex is;
  T alpha;
  __device__ void operator()(std::int64_t i) const { dst[id(i)] += alpha * src[is(i)]; }
};

template <typename T>
struct MulInPlace {
  T* dst;
  StridedIndex id;
  T value;
  __device__ void operator()(std::int64_t i) const { dst[id(i)] *= value; }
};

template <typename T>
struct Fill {
  T* dst;
  StridedIndex id;
  T value;
  __device__ void operator()(std::int64_t i) const { dst[id(i)] = value; }
};

}  // namespace

Tensor unary(UnaryOp op, const Tensor& a, const char* name) {
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  dispatch_floating(a.dtype(), name, [&]<typename T>() {
    ringgrad::cuda::for_each(a.device().index, out.numel(),
                             Unary<T>{op, out.data<T>(), base<const T>(a), index_of(a, name)});
  });
  return out;
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const char* name) {
  check_same_device(name, a, b);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  const Tensor ea = expand(a, shape), eb = expand(b, shape);
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  auto launch = [&]<typename T>() {
    ringgrad::cuda::for_each(a.device().index, out.numel(),
                             Binary<T>{op, out.data<T>(), base<const T>(ea), index_of(ea, name), base<const T>(eb),
                                       index_of(eb, name)});
  };
  if (op == BinaryOp::gelu_backward) {
    dispatch_floating(a.dtype(), name, launch);
  } else {
    dispatch_all(a.dtype(), launch);
  }
  return out;
}

void add_(const Tensor& dst, const Tensor& src, double alpha) {
  check_same_device("add_", dst, src);
  const Tensor s = expand(src, dst.shape());
  dispatch_all(dst.dtype(), [&]<typename T>() {
    ringgrad::cuda::for_each(dst.device().index, dst.numel(),
                             AddInPlace<T>{base<T>(dst), index_of(dst, "add_"), base<const T>(s), index_of(s, "add_"),
                                           static_cast<T>(alpha)});
  });
}

void mul_(const Tensor& dst, double value) {
  dispatch_all(dst.dtype(), [&]<typename T>() {
    ringgrad::cuda::for_each(dst.device().index, dst.numel(),
                             MulInPlace<T>{base<T>(dst), index_of(dst, "mul_"), static_cast<T>(value)});
  });
}

void fill_(const Tensor& dst, double value) {
  dispatch_all(dst.dtype(), [&]<typename T>() {
    ringgrad::cuda::for_each(dst.device().index, dst.numel(),
                             Fill<T>{base<T>(dst), index_of(dst, "fill_"), static_cast<T>(value)});
  });
}

}  // namespace ringgrad::kernels::cuda
